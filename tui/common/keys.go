package common

import "charm.land/bubbles/v2/key"

// KeyMap is every key binding of the UI, in one place so that no two screens
// disagree about what a key does. Components pick the bindings they answer
// for their help; the root model handles the global ones.
type KeyMap struct {
	// Moving around.
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding
	// Left and Right scroll the detail pane sideways: a command's word
	// wider than the pane (a quoted grep pattern) stands whole on its
	// line, never cut in two.
	Left  key.Binding
	Right key.Binding

	// The checklist.
	Accept     key.Binding // run the proposed step, or the selected one
	Rerun      key.Binding
	RunAll     key.Binding
	Cancel     key.Binding // cancel a running probe; back out of a screen
	ToggleMode key.Binding // guided <-> free
	OpenCause  key.Binding
	// CopyByHand copies the commands of the detail pane (a step's "By
	// hand", an open hypothesis's "What would settle it"): the same key
	// as Copy on the cause screen.
	CopyByHand key.Binding

	// The investigation record.
	Note    key.Binding
	Confirm key.Binding
	RuleOut key.Binding

	// The actions panel: the only things meshtriage does beyond reading,
	// each behind a confirmation.
	TestRequest  key.Binding
	DebugLogging key.Binding

	// The cause screen.
	NextBlock key.Binding
	PrevBlock key.Binding
	Copy      key.Binding
	ChooseFix key.Binding
	Verify    key.Binding
	Back      key.Binding

	// The picker.
	Filter key.Binding
	Select key.Binding

	// Text entry.
	Save    key.Binding
	Newline key.Binding
	Discard key.Binding

	// Dialogs.
	Yes key.Binding
	No  key.Binding

	Help      key.Binding
	Quit      key.Binding
	ForceQuit key.Binding
}

// DefaultKeyMap is the UI's keymap.
func DefaultKeyMap() *KeyMap {
	return &KeyMap{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "scroll up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "scroll down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "top")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "bottom")),
		Left:     key.NewBinding(key.WithKeys("left"), key.WithHelp("←", "scroll left")),
		Right:    key.NewBinding(key.WithKeys("right"), key.WithHelp("→", "scroll right")),

		Accept:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run")),
		Rerun:      key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "re-run")),
		RunAll:     key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "run all")),
		Cancel:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		ToggleMode: key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "guided/free")),
		OpenCause:  key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "open cause")),
		CopyByHand: key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "copy commands")),

		Note:    key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "note")),
		Confirm: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "confirm")),
		RuleOut: key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "rule out")),

		TestRequest:  key.NewBinding(key.WithKeys("T"), key.WithHelp("T", "test request")),
		DebugLogging: key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "envoy debug log")),

		NextBlock: key.NewBinding(key.WithKeys("tab", "down", "j"), key.WithHelp("tab", "block")),
		PrevBlock: key.NewBinding(key.WithKeys("shift+tab", "up", "k"), key.WithHelp("shift+tab", "previous block")),
		Copy:      key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "copy")),
		ChooseFix: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "pick")),
		Verify:    key.NewBinding(key.WithKeys("v"), key.WithHelp("v", "verify")),
		Back:      key.NewBinding(key.WithKeys("esc", "backspace"), key.WithHelp("esc", "back")),

		Filter: key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Select: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "select")),

		Save:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "save")),
		Newline: key.NewBinding(key.WithKeys("ctrl+j", "alt+enter"), key.WithHelp("ctrl+j", "new line")),
		Discard: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "discard")),

		Yes: key.NewBinding(key.WithKeys("y", "Y", "enter"), key.WithHelp("y", "yes")),
		No:  key.NewBinding(key.WithKeys("n", "N", "esc", "q"), key.WithHelp("n", "no")),

		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:      key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		ForceQuit: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c ×2", "quit now")),
	}
}
