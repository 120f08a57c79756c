package incidentlog

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
)

const jwt = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJrdWJlcm5ldGVzIiwic3ViIjoic3lzdGVtOnNlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"

func TestRedact(t *testing.T) {
	cases := []struct {
		name string
		in   string
		// secrets must not survive; keep must.
		secrets []string
		keep    []string
	}{
		{
			name:    "authorization header in text",
			in:      "> GET /orders HTTP/1.1\n> Authorization: Bearer s3cr3t-t0ken\n> Host: checkout",
			secrets: []string{"s3cr3t-t0ken"},
			keep:    []string{"Authorization: [REDACTED]", "> Host: checkout", "GET /orders"},
		},
		{
			name:    "bearer anywhere",
			in:      `retrying with bearer abc.def-ghi_123 after 401`,
			secrets: []string{"abc.def-ghi_123"},
			keep:    []string{"bearer [REDACTED] after 401"},
		},
		{
			name: "bearer in prose is left alone",
			in:   "the bearer token had expired",
			keep: []string{"the bearer token had expired"},
		},
		{
			name:    "quoted access-log field keeps the rest of the line",
			in:      `[2026-12-02T03:04:05.000Z] "GET /orders HTTP/1.1" 503 UH no_healthy_upstream - "-" 0 19 0 - "-" "curl/8" "Authorization: Bearer tok123" "checkout:8080" "-" outbound|8080||checkout.shop.svc.cluster.local`,
			secrets: []string{"tok123"},
			keep:    []string{`"Authorization: [REDACTED]" "checkout:8080"`, "503 UH no_healthy_upstream", "outbound|8080||checkout.shop.svc.cluster.local"},
		},
		{
			name:    "cookie and set-cookie headers",
			in:      "Cookie: session=abcdef; csrftoken=xyz\nSet-Cookie: id=a3fWa; Expires=Thu, 21 Oct 2026 07:28:00 GMT\nx-api-key: AKIA1234\nProxy-Authorization: Basic dXNlcjpwYXNz",
			secrets: []string{"session=abcdef", "csrftoken=xyz", "id=a3fWa", "AKIA1234", "dXNlcjpwYXNz"},
			keep:    []string{"Cookie: [REDACTED]", "Set-Cookie: [REDACTED]", "x-api-key: [REDACTED]", "Proxy-Authorization: [REDACTED]"},
		},
		{
			name:    "JSON access log",
			in:      `{"authority":"checkout:8080","authorization":"Bearer tok456","cookie":"sid=789","x_api_key":"k-000","response_code":503,"response_flags":"UF","upstream_transport_failure_reason":"TLS_error:_268435581:SSL_routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED"}`,
			secrets: []string{"tok456", "sid=789", "k-000"},
			keep:    []string{`"authorization":"[REDACTED]"`, `"cookie":"[REDACTED]"`, `"x_api_key":"[REDACTED]"`, `"response_flags":"UF"`, "CERTIFICATE_VERIFY_FAILED"},
		},
		{
			name:    "JSON inside a JSON string",
			in:      `{"log":"{\"authorization\":\"Bearer tok789\",\"path\":\"/x\"}"}`,
			secrets: []string{"tok789"},
			keep:    []string{`\"authorization\":\"[REDACTED]\"`, `\"path\":\"/x\"`},
		},
		{
			name:    "Envoy debug header dump",
			in:      "':authority', 'checkout:8080'\n'authorization', 'Basic Zm9vOmJhcg=='\n'cookie', 'a=b'\n':path', '/orders'",
			secrets: []string{"Zm9vOmJhcg==", "a=b"},
			keep:    []string{"'authorization', '[REDACTED]'", "'cookie', '[REDACTED]'", "':path', '/orders'"},
		},
		{
			name:    "JWT alone",
			in:      "x-jwt-assertion " + jwt + " rejected",
			secrets: []string{jwt, "eyJpc3Mi"},
			keep:    []string{"x-jwt-assertion [REDACTED] rejected"},
		},
		{
			name:    "PEM private key and certificate",
			in:      "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\nProc-Type: 4,ENCRYPTED\n-----END RSA PRIVATE KEY-----\ncert:\n-----BEGIN CERTIFICATE-----\nMIIDUTCCAjmgAwIBAgIQb77iVMIpAGFcsfdOPS8XEzANBgkqhkiG9w0BAQsFADAY\n-----END CERTIFICATE-----\ndone",
			secrets: []string{"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo", "ENCRYPTED", "MIIDUTCCAjmgAwIBAgIQb77iVMIpAGFcsfdOPS8XEzANBgkqhkiG9w0BAQsFADAY"},
			keep:    []string{"-----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----", "-----BEGIN CERTIFICATE-----[REDACTED]-----END CERTIFICATE-----", "done"},
		},
		{
			name:    "PEM cut off by a byte limit",
			in:      "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\nBKcwggSjAgEAAoIBAQC7",
			secrets: []string{"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "BKcwggSjAgEAAoIBAQC7"},
			keep:    []string{"-----BEGIN PRIVATE KEY-----[REDACTED]"},
		},
		{
			name: "config_dump secret fragment",
			in: `{"name":"default","tls_certificate":{"certificate_chain":{"inline_bytes":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURVVENDQWptZ0F3SUJBZ0lRYjc3aVZNSXBBR0Zj"},` +
				`"private_key":{"inline_bytes":"bm90LWEtcmVhbC1rZXk="},"password":{"inline_string":"hunter2"}},` +
				`"generic_secret":{"secret":{"watched_directory":{"path":"/etc/hmac"},"inline_string":"hmac-s3cret"}},` +
				`"session_ticket_keys":{"keys":[{"inlineBytes":"c2Vzc2lvbi10aWNrZXQ="}]},"access_log":{"format":{"inline_string":"%START_TIME%"}}}`,
			secrets: []string{"LS0tLS1CRUdJTiBDRVJU", "bm90LWEtcmVhbC1rZXk=", "hunter2", "hmac-s3cret", "c2Vzc2lvbi10aWNrZXQ="},
			keep:    []string{`"name":"default"`, `"inline_bytes":"[REDACTED]"`, `"inlineBytes":"[REDACTED]"`, `"inline_string":"%START_TIME%"`, `"path":"/etc/hmac"`},
		},
		{
			name:    "config_dump as YAML",
			in:      "tls_certificate:\n  certificate_chain:\n    inline_bytes: c29tZS1jZXJ0\n  private_key:\n    inline_string: super-secret-key\n  private_key_provider: null\naccess_log:\n  format:\n    inline_string: '%START_TIME% %RESPONSE_FLAGS%'",
			secrets: []string{"c29tZS1jZXJ0", "super-secret-key"},
			keep:    []string{"inline_bytes: [REDACTED]", "inline_string: [REDACTED]", "private_key_provider: null", "inline_string: '%START_TIME% %RESPONSE_FLAGS%'"},
		},
		{
			name: "kubeconfig",
			in: `apiVersion: v1
clusters:
- cluster:
    server: https://10.0.0.1:6443
  name: prod
users:
- name: admin
  user:
    client-certificate-data: Y2xpZW50LWNlcnQtZGF0YQ==
    client-key-data: Y2xpZW50LWtleS1kYXRh
    token: abcdef.0123456789abcdef
    password: hunter2
- name: oidc
  user:
    auth-provider:
      config:
        client-id: kubectl
        client-secret: oidc-client-s3cret
        id-token: ` + jwt + `
        refresh-token: refresh-r3fresh
- name: eks
  user:
    exec:
      command: aws
      env:
      - name: AWS_SECRET_ACCESS_KEY
        value: wJalrXUtnFEMIK7MDENG
      - name: AWS_PROFILE
        value: prod`,
			secrets: []string{"Y2xpZW50LWNlcnQtZGF0YQ==", "Y2xpZW50LWtleS1kYXRh", "abcdef.0123456789abcdef", "hunter2", "oidc-client-s3cret", "eyJ", "refresh-r3fresh", "wJalrXUtnFEMIK7MDENG"},
			keep:    []string{"client-key-data: [REDACTED]", "token: [REDACTED]", "password: [REDACTED]", "client-id: kubectl", "server: https://10.0.0.1:6443", "value: prod", "command: aws"},
		},
		{
			name:    "pod env in JSON",
			in:      `{"env":[{"name":"DB_PASSWORD","value":"pa55"},{"name":"PORT","value":"8080"}]}`,
			secrets: []string{"pa55"},
			keep:    []string{`{"name":"PORT","value":"8080"}`},
		},
		{
			name:    "several credentials on one line",
			in:      "{token: abc123, password: def456}",
			secrets: []string{"abc123", "def456"},
		},
		{
			name:    "commands and URLs",
			in:      "kubectl --token=t0k3n --server https://admin:pw123@10.0.0.1 get pods\ncurl -u admin:pw456 'http://checkout:8080/orders?id=7&access_token=qs-tok&x=1'",
			secrets: []string{"t0k3n", "pw123", "pw456", "qs-tok"},
			keep:    []string{"--token=[REDACTED]", "https://admin:[REDACTED]@10.0.0.1", "id=7&access_token=[REDACTED]&x=1", "get pods"},
		},
		{
			name: "ordinary evidence is untouched",
			in:   "outbound|8080||checkout.shop.svc.cluster.local: 0 healthy of 3 hosts (failed_outlier_check); DestinationRule shop/checkout tls ISTIO_MUTUAL; token bucket 5; private_key_provider none",
			keep: []string{"outbound|8080||checkout.shop.svc.cluster.local: 0 healthy of 3 hosts (failed_outlier_check); DestinationRule shop/checkout tls ISTIO_MUTUAL; token bucket 5; private_key_provider none"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Redact(tc.in)
			for _, s := range tc.secrets {
				if strings.Contains(got, s) {
					t.Errorf("secret %q survived:\n%s", s, got)
				}
			}
			for _, k := range tc.keep {
				if !strings.Contains(got, k) {
					t.Errorf("lost %q:\n%s", k, got)
				}
			}
			if again := Redact(got); again != got {
				t.Errorf("not idempotent:\nonce:  %s\ntwice: %s", got, again)
			}
		})
	}
}

// The real config_dump of a sidecar carries its workload certificate chain
// and (Envoy-redacted) key as base64 inline_bytes.
func TestRedactRealConfigDump(t *testing.T) {
	raw, err := os.ReadFile("testdata/config_dump.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"inline_bytes": "LS0tLS1CRUdJTi`) {
		t.Fatal("fixture no longer holds a certificate chain: the test would prove nothing")
	}
	got := Redact(string(raw))
	if strings.Contains(got, "LS0tLS1CRUdJTi") || strings.Contains(got, "W3JlZGFjdGVkXQ==") {
		t.Errorf("certificate or key bytes survived:\n%s", got)
	}
	for _, keep := range []string{`"name": "default"`, `"name": "ROOTCA"`, `"inline_bytes": "[REDACTED]"`, "SecretsConfigDump"} {
		if !strings.Contains(got, keep) {
			t.Errorf("lost %q", keep)
		}
	}
}

func TestRedactEventCoversEveryString(t *testing.T) {
	secret := "Bearer " + jwt
	ev := runbook.Event{
		Time: time.Date(2026, 12, 2, 3, 4, 0, 0, time.UTC), Kind: runbook.EventProbeRan, Session: "s1",
		Probe: &runbook.ProbeRan{
			Step: "logs", Probe: "access-log", Status: probes.StatusFail,
			Summary:  "401 with authorization: " + secret,
			Facts:    probes.Facts{"log_details": []string{"x " + secret}, "log_note": secret, "authorization": "opaque-value", "log_503": 3},
			Evidence: probes.Evidence{Columns: []string{"header"}, Rows: [][]string{{secret}}, Raw: "Authorization: " + secret},
			Commands: []string{"curl -H 'Authorization: " + secret + "' http://checkout"},
		},
		Started: &runbook.SessionStarted{Extra: map[string]string{"token": "opaque-2", "note": secret}},
	}
	got := RedactEvent(ev)
	line, err := marshalLine(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{jwt, "opaque-value", "opaque-2"} {
		if strings.Contains(string(line), s) {
			t.Errorf("%q survived: %s", s, line)
		}
	}
	if got.Probe.Facts["log_503"] != 3 || !got.Time.Equal(ev.Time) || got.Probe.Status != probes.StatusFail {
		t.Errorf("non-string data changed: %+v", got.Probe)
	}
	if !strings.Contains(ev.Probe.Evidence.Raw, jwt) || ev.Probe.Facts["log_details"].([]string)[0] != "x "+secret {
		t.Error("RedactEvent modified the caller's event")
	}
	if got.Probe.Facts["log_details"].([]string)[0] != "x Bearer [REDACTED]" {
		t.Errorf("list fact: %q", got.Probe.Facts["log_details"])
	}
}

// A probe's evidence can be a large config_dump excerpt; redaction runs on
// every event before it is written, so it must stay cheap.
func BenchmarkRedact(b *testing.B) {
	for _, name := range []string{"config_dump.json", "config_dump_secrets.json"} {
		raw, err := os.ReadFile("testdata/" + name)
		if err != nil {
			b.Fatal(err)
		}
		s := strings.Repeat(string(raw), 1<<20/len(raw)) // about 1 MB
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				Redact(s)
			}
		})
	}
}
