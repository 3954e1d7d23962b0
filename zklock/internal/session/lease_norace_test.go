//go:build !race

package session

const raceBuild = false
