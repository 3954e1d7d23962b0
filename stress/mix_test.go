package main

import (
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/tierlock/tierlock/stress/internal/check"
)

func TestMixFlag(t *testing.T) {
	c, err := parseFlags([]string{"-mix", "tier:2,curator:1,kazoo,gozk:1,tier:1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Procs != 6 || !slices.Equal(c.Impls, []string{implMix}) {
		t.Fatalf("procs %d, impls %v", c.Procs, c.Impls)
	}
	var got []string
	for slot := range c.Procs {
		got = append(got, c.implOf(implMix, slot))
	}
	if want := []string{"tier", "tier", "tier", "curator", "kazoo", "gozk"}; !slices.Equal(got, want) {
		t.Fatalf("slots %v, want %v", got, want)
	}
	if c.implOf(implTier, 3) != implTier {
		t.Fatal("implOf of a plain run")
	}
	if _, err := parseFlags([]string{"-mix", "tier:2,gozk:2", "-procs", "4"}, io.Discard); err != nil {
		t.Fatalf("-procs equal to the mix's total: %v", err)
	}
	for _, args := range [][]string{
		{"-mix", "tier:0"},
		{"-mix", "tier:x"},
		{"-mix", "cobol:1"},
		{"-mix", "tier:1,gozk:1", "-procs", "4"},
		{"-mix", "tier:1", "-impl", "gozk"},
		{"-mix", "tier:1", "-fault", "drop"},
	} {
		if _, err := parseFlags(args, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

func TestOverlapPairs(t *testing.T) {
	fam := func(p int32) string { return []string{"tier", "curator", "kazoo"}[p] }
	holds := []check.Hold{
		{Proc: 0, Enter: 0, Exit: 10},
		{Proc: 1, Enter: 10, Exit: 20}, // touches, no overlap
		{Proc: 2, Enter: 15, Exit: 30}, // overlaps curator
		{Proc: 1, Enter: 25, Exit: 26}, // overlaps kazoo
		{Proc: 0, Enter: 5, Exit: 6, Path: 1},
	}
	got := overlapPairs(holds, fam)
	if len(got) != 1 || got["curator+kazoo"] != 2 {
		t.Fatalf("pairs %v", got)
	}
}
