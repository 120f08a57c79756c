package ztunnel

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// FuzzParseLine: no line may panic the parser or the tally, a parsed
// entry is sane, and every line read is an entry or unparsed.
func FuzzParseLine(f *testing.F) {
	for _, name := range []string{"testdata/access.log", "testdata/access_1_22.log"} {
		if fh, err := os.Open(name); err == nil {
			sc := bufio.NewScanner(fh)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				f.Add(sc.Text())
			}
			fh.Close()
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		if e, ok := ParseLine(line); ok {
			if e.BytesSent < 0 || e.BytesRecv < 0 || e.DstPort() < 0 {
				t.Errorf("negative figure from %q: %+v", line, e)
			}
			_, _, _ = e.Failure(), e.DeniedBy(), e.Rejection()
			if k := e.Key(); ParseErrorKey(k.String()) != k && !strings.Contains(e.Error, "\t") {
				t.Errorf("error key %q does not read back", k)
			}
			_, _ = e.SrcIP(), e.TargetIP()
		}
		s, err := Tally(strings.NewReader(line), nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.Entries+s.Opened+s.Unparsed != s.Lines {
			t.Errorf("%d lines, %d entries, %d opened, %d unparsed", s.Lines, s.Entries, s.Opened, s.Unparsed)
		}
	})
}

// FuzzParseConfigDump: no document may panic the decoder.
func FuzzParseConfigDump(f *testing.F) {
	if data, err := os.ReadFile("testdata/dump_list.json"); err == nil {
		f.Add(data)
	}
	if path := istioctlDumpFile(); path != "" {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"workloads":{"/1.2.3.4":{"workloadIps":["1.2.3.4"],"waypoint":{"destination":{"network":"n","address":"1.2.3.5"}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseConfigDump(data)
		if err != nil {
			return
		}
		for _, w := range d.Workloads {
			for _, ip := range w.IPs {
				d.WorkloadByIP(ip)
			}
		}
		for _, s := range d.Services {
			d.ServiceByHost(s.Hostname)
		}
	})
}
