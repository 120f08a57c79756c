package accesslog

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSeeds are the lines of the realworld logs and of testdata whose first
// byte is (or is not) '{', as the fuzz targets' seed corpus. The realworld
// ones are absent outside the shared workspace; testdata's are not.
func fuzzSeeds(f *testing.F, json bool) {
	files, _ := filepath.Glob("testdata/*.log")
	files = append(files, filepath.Join(realworld, "accesslog", "text.log"), filepath.Join(realworld, "accesslog", "json.log"))
	for _, name := range files {
		fh, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "## src:") || (strings.HasPrefix(line, "{") != json) {
				continue
			}
			f.Add(line)
		}
		fh.Close()
	}
}

// checkEntry holds what any parsed entry must satisfy, whatever the input.
func checkEntry(t *testing.T, line string, e Entry) {
	if e.ResponseCode < 0 || e.BytesReceived < 0 || e.BytesSent < 0 || e.DurationMs < 0 {
		t.Errorf("negative figure from %q: %+v", line, e)
	}
	// One alt_stat_name delimiter is dropped: a cluster still ending in ";"
	// was printed with two.
	if !e.JSON && strings.HasSuffix(e.UpstreamCluster, ";") && !strings.Contains(line, e.UpstreamCluster+";") {
		t.Errorf("cluster %q kept its alt_stat_name delimiter", e.UpstreamCluster)
	}
	if e.TCP && e.Method != "" {
		t.Errorf("TCP entry with method %q from %q", e.Method, line)
	}
	_ = e.ConnectionRefused()
	_ = e.BlackHole()
	_ = e.Destination()
}

// FuzzParseTextLine feeds TEXT access-log lines to the parser, by the
// built-in layouts and by a mesh's own format, and the same bytes as a log
// stream to the tally: neither may panic, a parsed entry must be sane, and
// every line read is an entry or unparsed.
func FuzzParseTextLine(f *testing.F) {
	fuzzSeeds(f, false)
	custom, err := ParseFormat("fuzz", "TEXT", meshTextCustomFormat)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if e, ok := ParseLine(line); ok {
			checkEntry(t, line, e)
		}
		if e, ok := (Formats{custom}).ParseLine(line); ok {
			checkEntry(t, line, e)
		}
		s, err := Tally(strings.NewReader(line))
		if err != nil {
			t.Fatal(err)
		}
		if s.Entries+s.Unparsed != s.Lines {
			t.Errorf("lines %d = entries %d + unparsed %d does not hold for %q", s.Lines, s.Entries, s.Unparsed, line)
		}
	})
}

// FuzzParseJSONLine feeds JSON-encoded entries to the parser, by Istio's
// keys and by a mesh's own.
func FuzzParseJSONLine(f *testing.F) {
	fuzzSeeds(f, true)
	custom, err := ParseFormat("fuzz", "JSON", meshJSONKeysFormat)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if e, ok := (Formats{custom}).ParseLine(line); ok {
			checkEntry(t, line, e)
		}
		e, ok := ParseLine(line)
		if !ok {
			return
		}
		checkEntry(t, line, e)
		if strings.HasPrefix(line, "{") && !e.JSON {
			t.Errorf("%q parsed, but not as JSON", line)
		}
	})
}
