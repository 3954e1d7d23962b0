package zklock

// ParseServers is parseServers, for the tests of the server list's forms.
var ParseServers = parseServers
