package tui

import (
	"testing"

	"github.com/meshtriage/meshtriage/tui/enginetest"
)

func TestSmoke(t *testing.T) {
	h := start(t, enginetest.New(outlierScript()), 80, 24, Options{})
	s := h.waitFor("What are the callers seeing?")
	t.Log("\n" + s)
	h.key("enter")
	s = h.waitFor("next:")
	t.Log("\n" + h.quiet())
	h.key("enter")
	h.waitFor("3/3 pods")
	t.Log("\n" + h.quiet())
}
