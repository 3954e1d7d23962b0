package writes

// Await's steps apart, for the explorer (package writes_test), whose
// callers cannot block.
var (
	GiveUpTold = (*Queue).giveUpTold
	SettledOr  = settledOr
)

// NewMutants are the seeded bugs named in this package (mutants.go).
var NewMutants = []string{mutGiveUpLeavesNode, mutGoneToldNoNode, mutClosedUntold, mutUnknownToldWithdrawn,
	mutDeleteToldNeighbour, mutSizeByEstimate, mutSizeWithoutChroot}
