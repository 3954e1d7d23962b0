package main

import (
	"slices"
	"strings"

	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/runner"
)

// recipeFlags checks -recipe and the flags that go with it: -readers with
// rw, -leases and -permits with semaphore, and none of the mutex's own
// (-handoff, -mix). The figures of the recipe not run are cleared, so that
// they stay out of the JSON.
func recipeFlags(c *runner.Config, v string, set map[string]bool) error {
	c.Recipe = proto.Recipe(v)
	switch c.Recipe {
	case proto.Mutex, proto.RW, proto.Semaphore, proto.Multi:
	default:
		return usageErr("-recipe must be mutex, rw, semaphore or multi, got %q", v)
	}
	if err := multiFlags(c, set); err != nil {
		return err
	}
	if err := recipeFlagsMatch(c, set); err != nil {
		return err
	}
	if err := recipeRanges(c); err != nil {
		return err
	}
	if c.Recipe != proto.RW {
		c.Readers = 0
	}
	if c.Recipe != proto.Semaphore {
		c.Leases, c.Permits = 0, 0
	}
	return nil
}

// recipeFlagsMatch refuses a flag of another recipe than the one run.
func recipeFlagsMatch(c *runner.Config, set map[string]bool) error {
	switch {
	case set["readers"] && c.Recipe != proto.RW:
		return usageErr("-readers goes with -recipe rw")
	case (set["leases"] || set["permits"]) && c.Recipe != proto.Semaphore:
		return usageErr("-leases and -permits go with -recipe semaphore")
	case c.Recipe != proto.Mutex && (c.Handoff || set["handoff-max"] || set["handoff-max-hold"]):
		return usageErr("-recipe %s: hand-off is the mutex's only (tier.RWLock and tier.Semaphore refuse it)", c.Recipe)
	case c.Recipe != proto.Mutex && set["mix"]:
		return usageErr("-recipe %s does not go with -mix (a mixed fleet of mutexes)", c.Recipe)
	}
	return nil
}

// recipeRanges refuses a recipe's figure out of its range.
func recipeRanges(c *runner.Config) error {
	switch {
	case c.Recipe == proto.RW && !(c.Readers >= 0 && c.Readers <= 1):
		return usageErr("-readers must be between 0 and 1, got %v", c.Readers)
	case c.Recipe == proto.Semaphore && c.Leases < 1:
		return usageErr("-leases must be at least 1, got %d", c.Leases)
	case c.Recipe == proto.Semaphore && (c.Permits < 1 || c.Permits > c.Leases):
		return usageErr("-permits must be between 1 and -leases (%d), got %d", c.Leases, c.Permits)
	}
	return nil
}

// expandRecipeImpls turns the -impl value of a read/write lock or
// semaphore run into its list of runs: tier, curator, nolock; "all" is tier
// and curator.
func expandRecipeImpls(v string) ([]proto.Impl, error) {
	var out []proto.Impl
	add := func(im proto.Impl) {
		if !slices.Contains(out, im) {
			out = append(out, im)
		}
	}
	for _, name := range strings.Split(v, ",") {
		im := proto.Impl(strings.TrimSpace(name))
		switch {
		case im == "all":
			add(proto.Tier)
			add(proto.Curator)
		case slices.Contains(proto.RecipeImpls, im):
			add(im)
		default:
			return nil, usageErr("-impl: %q has no read/write lock or semaphore here (want tier, curator, nolock or all)", name)
		}
	}
	return out, nil
}
