//go:build !race

package writes_test

const raceBuild = false
