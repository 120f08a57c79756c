package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The committed scenarios came from a Python generator. Ids, ordering and
// timestamps were derived from Python's str(), hashlib and timedelta
// rounding; these helpers reproduce them so the port writes the same data.

// seconds and millis are Python's timedelta(seconds=x) and
// timedelta(milliseconds=x) for a float x: whole units exactly, the
// fraction through float arithmetic, rounded half-even to a microsecond.
func seconds(x float64) time.Duration { return pythonTimedelta(x, 1_000_000) }

func millis(x float64) time.Duration { return pythonTimedelta(x, 1000) }

func pythonTimedelta(x float64, microsPerUnit int64) time.Duration {
	whole, frac := math.Modf(x)
	micros := int64(whole) * microsPerUnit
	leftover := 0.0
	if frac != 0 {
		wholeMicros, fracMicros := math.Modf(float64(microsPerUnit) * frac)
		micros += int64(wholeMicros)
		leftover = fracMicros
	}
	if leftover != 0 {
		rounded := math.Round(leftover)
		if math.Abs(rounded-leftover) == 0.5 {
			odd := float64(micros & 1)
			rounded = 2.0*math.Round((leftover+odd)*0.5) - odd
		}
		micros += int64(rounded)
	}
	return time.Duration(micros) * time.Microsecond
}

// totalSeconds is timedelta.total_seconds().
func totalSeconds(d time.Duration) float64 {
	return float64(d/time.Microsecond) / 1e6
}

// pythonStr is str(v) for the values the generator hashes into ids.
func pythonStr(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case bool:
		if v {
			return "True"
		}
		return "False"
	case nil:
		return "None"
	case float64:
		return pythonFloatRepr(v)
	case time.Time:
		// str() of an aware UTC datetime.
		s := v.UTC().Format("2006-01-02 15:04:05")
		if us := v.Nanosecond() / 1000; us != 0 {
			s += fmt.Sprintf(".%06d", us)
		}
		return s + "+00:00"
	default:
		panic(fmt.Sprintf("pythonStr: unsupported %T", v))
	}
}

// pythonFloatRepr is repr(float): the shortest round-tripping digits, in
// exponent form below 1e-4 or from 1e16.
func pythonFloatRepr(f float64) string {
	s := strconv.FormatFloat(f, 'e', -1, 64)
	if exp, err := strconv.Atoi(s[strings.IndexByte(s, 'e')+1:]); err == nil && exp >= -4 && exp < 16 {
		s = strconv.FormatFloat(f, 'f', -1, 64)
	}
	if !strings.ContainsAny(s, ".eIN") {
		s += ".0"
	}
	return s
}

// digest is sha256 over the parts' str() joined by "/", as hex.
func digest(parts ...any) string {
	strs := make([]string, len(parts))
	for i, p := range parts {
		strs[i] = pythonStr(p)
	}
	sum := sha256.Sum256([]byte(strings.Join(strs, "/")))
	return hex.EncodeToString(sum[:])
}

// digestInt is int(digest(...)[:8], 16).
func digestInt(parts ...any) int { return hexInt(digest(parts...)[:8]) }

func hexInt(hexDigits string) int {
	n, err := strconv.ParseUint(hexDigits, 16, 64)
	if err != nil {
		panic(err)
	}
	return int(n)
}

// uid is a stable version-4 UUID from the parts: Kubernetes uids, request
// ids and istiod nonces that must not change between runs.
func uid(parts ...any) string {
	b, err := hex.DecodeString(digest(parts...)[:32])
	if err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// pythonRepr is repr() of a str, as it appears inside a tuple's repr.
func pythonRepr(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"`
	}
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}
