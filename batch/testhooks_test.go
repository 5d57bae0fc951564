package batch

// SetKeyFilterRows sizes e's import key filters for n rows whatever the
// file's length: a filter far too small answers "maybe seen" for nearly
// every key, which is what a test of the suspects' path needs.
func SetKeyFilterRows(e *Engine, n int64) { e.keyFilterRows = n }

// SetMaxHeld bounds the bytes of the suspects an inline import of e
// holds for the store, so that a test makes it read them back past n.
func SetMaxHeld(e *Engine, n int) { e.maxHeld = n }
