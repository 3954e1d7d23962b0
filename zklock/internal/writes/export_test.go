package writes

// Await's steps apart, for the explorer (package writes_test), whose
// callers cannot block.
var (
	GiveUpTold = (*Queue).giveUpTold
	SettledOr  = settledOr
)
