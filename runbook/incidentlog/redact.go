package incidentlog

import (
	"reflect"
	"regexp"
	"strings"

	"github.com/meshtriage/meshtriage/runbook"
)

// Redacted replaces a credential. The text around it (the header name, the
// YAML key, the PEM armour) stays so the log still reads.
const Redacted = "[REDACTED]"

// RedactEvent returns a deep copy of ev with Redact applied to every string
// it holds, found by reflection so that fields added to the event types later
// are covered without anyone remembering to list them here. A map value whose
// key names a credential ("authorization", "token", ...) is replaced whole.
func RedactEvent(ev runbook.Event) runbook.Event {
	return redactValue(reflect.ValueOf(ev)).Interface().(runbook.Event)
}

func redactValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		out := reflect.New(v.Type()).Elem()
		out.SetString(Redact(v.String()))
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(redactValue(v.Elem()))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(redactValue(v.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v) // unexported state (time.Time) is copied as is
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(redactValue(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			out := reflect.New(v.Type()).Elem()
			out.SetBytes([]byte(Redact(string(v.Bytes()))))
			return out
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(redactValue(v.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			out.Index(i).Set(redactValue(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k, val := it.Key(), it.Value()
			if k.Kind() == reflect.String && sensitiveKey.MatchString(k.String()) {
				out.SetMapIndex(k, redactWhole(val))
			} else {
				out.SetMapIndex(k, redactValue(val))
			}
		}
		return out
	}
	return v
}

// redactWhole replaces every non-empty string in v: the value of a key that
// names a credential is a credential however it looks.
func redactWhole(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		out := reflect.New(v.Type()).Elem()
		if v.Len() > 0 {
			out.SetString(Redacted)
		}
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(redactWhole(v.Elem()))
		return out
	case reflect.Slice:
		if v.IsNil() || v.Type().Elem().Kind() != reflect.String {
			return redactValue(v)
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(redactWhole(v.Index(i)))
		}
		return out
	}
	return redactValue(v)
}

// Redact replaces credentials in s: bearer and basic credentials, JWTs,
// credential headers (Authorization, Cookie, Set-Cookie, X-Api-Key, ...) in
// text, JSON and Envoy debug access logs, PEM blocks and their base64 form,
// config_dump DataSource bytes (inline_bytes, private_key, certificate_chain),
// kubeconfig credentials (token, client-key-data, client-certificate-data,
// password, auth-provider and exec secrets), secrets in URLs and command
// flags. It errs on the side of hiding too much: a lost token costs more than
// a hidden word.
func Redact(s string) string {
	if s == "" {
		return s
	}
	lower := strings.ToLower(s)
	for _, r := range textRules {
		if r.triggered(lower, false) {
			s = r.apply(s)
		}
	}
	// The other rules see one line at a time, and only lines that can
	// match: a config_dump excerpt is mostly lines that cannot.
	lower = strings.ToLower(s)
	if !anyTriggered(lineRules, lower, hasCredentialKey(lower)) {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	for i, line := range lines {
		ll := strings.ToLower(line)
		hasKey := hasCredentialKey(ll)
		for _, r := range lineRules {
			if r.triggered(ll, hasKey) {
				line = r.apply(line)
			}
		}
		lines[i] = line
	}
	return strings.Join(lines, "")
}

// hasCredentialKey reports whether lower holds a credential key, spelled
// with '-', '_' or neither.
func hasCredentialKey(lower string) bool {
	norm := dropSeparators.Replace(lower)
	for _, k := range normalizedKeys {
		if strings.Contains(norm, k) {
			return true
		}
	}
	return false
}

// rule is one redaction. It runs only if its text contains, lower-cased, one
// of triggers, or (byKey) a credential key, so that large evidence only pays
// for the expressions that can match.
type rule struct {
	triggers []string
	byKey    bool
	apply    func(string) string
}

func (r rule) triggered(lower string, hasKey bool) bool {
	if r.byKey && hasKey {
		return true
	}
	for _, t := range r.triggers {
		if strings.Contains(lower, t) {
			return true
		}
	}
	return false
}

func anyTriggered(rules []rule, lower string, hasKey bool) bool {
	for _, r := range rules {
		if r.triggered(lower, hasKey) {
			return true
		}
	}
	return false
}

var dropSeparators = strings.NewReplacer("-", "", "_", "")

// keyAlternation turns key names written with '-' into a case-insensitive
// alternation where each '-' also matches '_' or nothing, so one entry
// covers client-key-data, inline_bytes and inlineBytes alike.
func keyAlternation(keys []string) string {
	alts := make([]string, len(keys))
	for i, k := range keys {
		parts := strings.Split(k, "-")
		for j, p := range parts {
			parts[j] = regexp.QuoteMeta(p)
		}
		alts[i] = strings.Join(parts, "[-_]?")
	}
	return strings.Join(alts, "|")
}

// credentialKeys name a value that is a credential wherever it appears as a
// key: HTTP headers, kubeconfig user fields, Envoy DataSource bytes.
var credentialKeys = []string{
	// HTTP headers that carry credentials.
	"authorization", "proxy-authorization", "cookie", "set-cookie",
	"x-api-key", "api-key", "apikey", "x-auth-token", "x-access-token",
	"x-csrf-token", "x-xsrf-token", "x-amz-security-token", "x-vault-token",
	"x-goog-api-key",
	// kubeconfig users, auth-provider config and cloud credentials.
	"token", "id-token", "refresh-token", "access-token", "auth-token",
	"bearer-token", "client-key-data", "client-certificate-data",
	"password", "passwd", "client-secret", "secret-access-key",
	"aws-secret-access-key",
	// Envoy DataSource bytes and TLS material in config_dump.
	"inline-bytes", "private-key", "certificate-chain",
}

var (
	keys = keyAlternation(credentialKeys)
	// sensitiveKey matches a map key (a fact name, an Extra field) that
	// names a credential.
	sensitiveKey   = regexp.MustCompile(`(?i)^(?:` + keys + `)$`)
	normalizedKeys = func() []string {
		out := make([]string, len(credentialKeys))
		for i, k := range credentialKeys {
			out[i] = dropSeparators.Replace(k)
		}
		return out
	}()
)

// Names of environment variables that hold secrets.
const secretEnvName = `(?i:[A-Za-z0-9_.-]*(?:token|secret|password|passwd|credential|api[-_]?key|access[-_]?key|private[-_]?key)[A-Za-z0-9_.-]*)`

// textRules can span lines; each starts with a literal so the scan is fast.
var textRules = []rule{
	{triggers: []string{"-----begin"}, apply: redactPEM},
	// Envoy DataSource inline strings under a key that holds TLS keys or
	// secrets: "private_key": {"inline_string": "..."}; filename stays.
	{triggers: []string{"inline_string", "inlinestring"}, apply: redactSecretInlineStrings},
	// Environment variables that hold secrets, in pod specs and kubeconfig
	// exec plugins: {"name": "AWS_SECRET_ACCESS_KEY", "value": "..."}.
	{triggers: []string{`"name"`}, apply: redactGroup(`"name"\s*:\s*"`+secretEnvName+`"\s*,\s*"value"\s*:\s*"((?:[^"\\]|\\.)*)"`, 1)},
	{triggers: []string{"name"}, apply: redactGroup(`name[ \t]*:[ \t]*["']?`+secretEnvName+`["']?[ \t]*\r?\n[ \t-]*value[ \t]*:[ \t]*([^\r\n]*)`, 1)},
}

// lineRules see one line at a time.
var lineRules = []rule{
	// base64 of "-----BEGIN": client-certificate-data, client-key-data,
	// inline_bytes of certificates and keys, Secret data.
	{triggers: []string{"ls0tls1crudjtil"}, apply: replaceAll(`LS0tLS1CRUdJTi[A-Za-z0-9+/=]*`, Redacted)},
	// Key-value forms: JSON, JSON inside a JSON string, single-quoted (Envoy
	// debug header dumps: 'authorization', 'Bearer ...').
	{byKey: true, apply: redactGroup(`(?i)"(?:`+keys+`)"\s*:\s*"((?:[^"\\]|\\.)*)"`, 1)},
	{byKey: true, apply: redactGroup(`(?i)\\"(?:`+keys+`)\\"\s*:\s*\\"(.*?)\\"`, 1)},
	{byKey: true, apply: redactGroup(`(?i)'(?:`+keys+`)'\s*[:,]\s*'([^']*)'`, 1)},
	// Header or YAML text: a quoted access-log field "Authorization: ..."
	// ends at its quote; otherwise the value runs to the end of the line.
	{byKey: true, apply: redactGroup(`(?i)"(?:`+keys+`)[ \t]*:[ \t]*([^"\r\n]*)`, 1)},
	// A JSON object or list value is left to the rules above, which see
	// its inner keys.
	{byKey: true, apply: redactGroup(`(?i)(?:^|[^A-Za-z0-9_-])(?:`+keys+`)["']?[ \t]*:[ \t]*([^\s{\[][^\r\n]*)`, 1)},
	// Command lines: kubectl --token=..., curl -u user:pass.
	{triggers: []string{"--token", "--password", "--client-secret", "--api-key", "--auth-token", "--bearer-token"},
		apply: redactGroup(`(?i)--(?:token|password|client-secret|api-key|auth-token|bearer-token)(?:=|[ \t]+)([^\s"']+)`, 1)},
	{triggers: []string{"curl"}, apply: redactGroup(`(?i)\bcurl\b[^\r\n]*?\s(?:-u|--user)[ \t]+[^\s:]+:([^\s"']+)`, 1)},
	// URLs: secrets in the query string (access-log paths) and userinfo.
	{triggers: []string{"token=", "key=", "password=", "passwd=", "secret=", "sig=", "signature=", "credential=", "code=", "auth="},
		apply: redactGroup(`(?i)[?&;](?:access[-_]?token|id[-_]?token|refresh[-_]?token|token|api[-_]?key|apikey|key|password|passwd|client[-_]?secret|secret|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|code|auth)=([^&\s"'#;]*)`, 1)},
	{triggers: []string{"@"}, apply: redactGroup(`(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@"']+:([^/\s@"']+)@`, 1)},
	// Credentials standing alone: Bearer anywhere, Basic where it is quoted,
	// and anything shaped like a JWT.
	{triggers: []string{"bearer"}, apply: redactBearer},
	{triggers: []string{"basic"}, apply: redactGroup(`(?i)["']basic(?:[ \t]+|%20)([A-Za-z0-9+/]+=*)`, 1)},
	{triggers: []string{"eyj"}, apply: replaceAll(`eyJ[A-Za-z0-9_-]{2,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*`, Redacted)},
}

func replaceAll(expr, with string) func(string) string {
	re := regexp.MustCompile(expr)
	return func(s string) string { return re.ReplaceAllLiteralString(s, with) }
}

// redactGroup replaces submatch group of every match of expr with Redacted.
// An empty value has nothing to hide. A value that already starts with
// Redacted was handled by an earlier rule, but a value that runs to the end
// of the line may hold further credentials after it ("token: [REDACTED],
// password: x"), so the rule runs again on the rest.
func redactGroup(expr string, group int) func(string) string {
	re := regexp.MustCompile(expr)
	var apply func(string) string
	apply = func(s string) string {
		return replaceSubmatch(re, s, group, func(val string) string {
			v := strings.TrimLeft(val, "\"' \t")
			switch {
			case v == "":
				return val
			case strings.HasPrefix(v, Redacted):
				return val[:len(val)-len(v)] + Redacted + apply(v[len(Redacted):])
			}
			return Redacted
		})
	}
	return apply
}

// replaceSubmatch replaces submatch group of every match of re in s with
// what transform makes of it.
func replaceSubmatch(re *regexp.Regexp, s string, group int, transform func(string) string) string {
	matches := re.FindAllStringSubmatchIndex(s, -1)
	if matches == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		start, end := m[2*group], m[2*group+1]
		if start < 0 {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(transform(s[start:end]))
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

var (
	bearerRe = regexp.MustCompile(`(?i)\bbearer(?:[ \t]+|%20|\+)([A-Za-z0-9._~+/-]+=*)`)
	// Words that follow "bearer" in prose ("the bearer token expired") are
	// not credentials.
	bearerProse = map[string]bool{"token": true, "tokens": true, "auth": true, "authentication": true, "authorization": true, "header": true, "realm": true, "scheme": true}
)

func redactBearer(s string) string {
	return replaceSubmatch(bearerRe, s, 1, func(val string) string {
		if bearerProse[strings.ToLower(strings.TrimRight(val, "="))] {
			return val
		}
		return Redacted
	})
}

var (
	pemBegin = regexp.MustCompile(`-----BEGIN(?: |%20)([A-Z0-9 %]*?)-----`)
	pemEnd   = regexp.MustCompile(`-----END(?: |%20)[A-Z0-9 %]*?-----`)
	// pemBody is what a PEM body may look like when its END line was cut off
	// (a truncated log excerpt): base64, whitespace, escaped or URL-encoded
	// line breaks.
	pemBody = regexp.MustCompile(`^(?:[A-Za-z0-9+/=\s]|\\[nrt]|%0[AaDd]|%2[BbFf]|%3[Dd])*`)
)

// redactPEM replaces the body of every PEM block, keeping its armour so the
// reader sees that a certificate or key was there: "-----BEGIN CERTIFICATE-----
// [REDACTED]-----END CERTIFICATE-----". A block without an END line is
// redacted as far as its body looks like base64.
func redactPEM(s string) string {
	var b strings.Builder
	for {
		loc := pemBegin.FindStringIndex(s)
		if loc == nil {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:loc[1]])
		b.WriteString(Redacted)
		rest := s[loc[1]:]
		if end := pemEnd.FindStringIndex(rest); end != nil {
			b.WriteString(rest[end[0]:end[1]])
			s = rest[end[1]:]
			continue
		}
		// Already redacted (the body, or what was left of it, is gone).
		rest = strings.TrimPrefix(rest, Redacted)
		s = rest[len(pemBody.FindString(rest)):]
	}
}

// secretParent names the DataSource fields of Envoy's TLS and generic
// secrets, whose inline_string is the key or secret itself. Elsewhere an
// inline_string is config (an access-log format) and stays readable.
var secretParent = regexp.MustCompile(`(?i)^(?:private[-_]?key|certificate[-_]?chain|password|secret|generic[-_]?secret|hmac[-_]?secret|client[-_]?secret|token[-_]?secret)$`)

var inlineStringKey = regexp.MustCompile(`inline(?:_string|String)["']?[ \t]*:[ \t]*`)

// redactSecretInlineStrings redacts the value of every inline_string whose
// parent key is a secretParent, in JSON ("private_key": {"inline_string":
// "..."}) and YAML (private_key:\n  inline_string: ...).
func redactSecretInlineStrings(s string) string {
	locs := inlineStringKey.FindAllStringIndex(s, -1)
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		if loc[0] < last || !secretParent.MatchString(parentKey(s, loc[0])) {
			continue
		}
		start, end := valueSpan(s, loc[1])
		if start == end || s[start:end] == Redacted {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Redacted)
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// parentKey is the key of the object that holds the key starting at at.
func parentKey(s string, at int) string {
	if at > 0 && (s[at-1] == '"' || s[at-1] == '\'') {
		return jsonParentKey(s, at-1)
	}
	return yamlParentKey(s, at)
}

func jsonParentKey(s string, at int) string {
	depth := 0
	i := at - 1
	for ; i >= 0; i-- {
		if s[i] == '}' {
			depth++
		} else if s[i] == '{' {
			if depth == 0 {
				break
			}
			depth--
		}
	}
	i = skipSpaceBack(s, i-1)
	if i < 0 || s[i] != ':' {
		return ""
	}
	i = skipSpaceBack(s, i-1)
	if i < 0 || (s[i] != '"' && s[i] != '\'') {
		return ""
	}
	quote := s[i]
	j := strings.LastIndexByte(s[:i], quote)
	if j < 0 {
		return ""
	}
	return s[j+1 : i]
}

func skipSpaceBack(s string, i int) int {
	for i >= 0 && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i--
	}
	return i
}

var yamlKeyLine = regexp.MustCompile(`^[ \t]*(?:-[ \t]+)?["']?([A-Za-z0-9_-]+)["']?[ \t]*:[ \t]*\r?$`)

// yamlParentKey is the key of the nearest line above at with less indent.
func yamlParentKey(s string, at int) string {
	lineStart := strings.LastIndexByte(s[:at], '\n') + 1
	indent := at - lineStart
	for end := lineStart - 1; end > 0; {
		start := strings.LastIndexByte(s[:end], '\n') + 1
		line := s[start:end]
		if trimmed := strings.TrimLeft(line, " \t-"); trimmed != "" && len(line)-len(trimmed) < indent {
			if m := yamlKeyLine.FindStringSubmatch(line); m != nil {
				return m[1]
			}
			return ""
		}
		end = start - 1
	}
	return ""
}

// valueSpan is the value starting at i: a quoted string without its quotes,
// or the rest of the line.
func valueSpan(s string, i int) (int, int) {
	if i >= len(s) {
		return i, i
	}
	if q := s[i]; q == '"' || q == '\'' {
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case q:
				return i + 1, j
			}
		}
		return i + 1, len(s)
	}
	end := strings.IndexAny(s[i:], "\r\n")
	if end < 0 {
		return i, len(s)
	}
	return i, i + end
}
