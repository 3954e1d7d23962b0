package main

import (
	"strings"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// multiFlags checks -members: it goes with -recipe multi, which needs 2 to
// -paths members. Other recipes clear it, so that it stays out of the JSON.
func multiFlags(c *runner.Config, set map[string]bool) error {
	if c.Recipe != proto.Multi {
		if set["members"] {
			return usageErr("-members goes with -recipe multi")
		}
		c.Members = 0
		return nil
	}
	if c.Members < 2 || c.Members > c.Paths {
		return usageErr("-recipe multi: -members must be between 2 and -paths (%d), got %d", c.Paths, c.Members)
	}
	return nil
}

// expandMultiImpls turns the -impl value of a multi-lock run into its list
// of runs: tier (tier.MultiLock; "all" is tier) or nolock (no lock, which
// shows the checker can fail).
func expandMultiImpls(v string) ([]proto.Impl, error) {
	var out []proto.Impl
	for _, name := range strings.Split(v, ",") {
		im := proto.Impl(strings.TrimSpace(name))
		if im == "all" {
			im = proto.Tier
		}
		if im != proto.Tier && im != proto.Nolock {
			return nil, usageErr("-impl: %q has no multi-lock here (want tier, nolock or all)", name)
		}
		if !containsImpl(out, im) {
			out = append(out, im)
		}
	}
	return out, nil
}

func containsImpl(list []proto.Impl, im proto.Impl) bool {
	for _, x := range list {
		if x == im {
			return true
		}
	}
	return false
}
