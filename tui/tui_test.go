package tui

import (
	"testing"

	"github.com/meshtriage/meshtriage/tui/enginetest"
)

func TestSmoke(t *testing.T) {
	h := start(t, enginetest.New(outlierScript()), 80, 24, Options{})
	h.waitFor("What are the callers seeing?")
	h.key("enter")
	h.waitFor("next:")
	for i := 0; i < 4; i++ {
		h.key("enter")
		h.quiet()
	}
	t.Log("\n" + h.quiet())
	h.key("enter")
	t.Log("\n" + h.quiet())
	h.key("tab")
	t.Log("\n" + h.quiet())
	h.key("?")
	t.Log("\n" + h.quiet())
	h.key("esc")
	h.key("q")
	t.Log("\n" + h.quiet())
}
