//go:build !race

package gocronlock_test

const raceBuild = false
