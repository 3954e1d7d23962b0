package main

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zklock"
)

// The inspector reaches a secure client port with -tls-ca and a client
// certificate (-tls-cert, -tls-key; the server asks for one); a CA that
// did not sign the server's certificate, or no client certificate, is
// exit 3 with the TLS error, at once, and so is no TLS at all (a hint at
// the secure port); flags that do not fit together, or files that are not
// what they should be, are usage errors.
func TestInspectorOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a TLS server, about 3 s")
	}
	ca, err := zkserver.NewCA("tierlock test CA")
	if err != nil {
		t.Fatal(err)
	}
	other, err := zkserver.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	c := zktest.Ensemble(t, 1, zkserver.WithTLS(zkserver.TLS{CA: ca}))
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	client, err := ca.Issue(pkix.Name{CommonName: "inspector"})
	if err != nil {
		t.Fatal(err)
	}
	caFile, otherFile := write("ca.pem", ca.PEM), write("other.pem", other.PEM)
	certFile, keyFile := write("cert.pem", client.CertPEM), write("key.pem", client.KeyPEM)

	// A holder on the secure port, for ls to show.
	cert, err := client.TLS()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := zklock.Connect(ctx, c.SecureAddrs(), zklock.WithLogger(zktest.QuietLog),
		zklock.WithTLS(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	acquire(t, ctx, newLock(t, s, "/tls/job", zklock.WithLabel("over-tls")))

	zkFlag := c.SecureAddr(0)
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"trusted, with a certificate", []string{"-tls-ca", caFile, "-tls-cert", certFile, "-tls-key", keyFile}, exitOK, "over-tls"},
		{"another CA", []string{"-tls-ca", otherFile, "-tls-cert", certFile, "-tls-key", keyFile}, exitUnreachable, "certificate signed by unknown authority"},
		{"no client certificate", []string{"-tls-ca", caFile}, exitUnreachable, "remote error: tls: bad certificate"},
		{"certificate without key", []string{"-tls-ca", caFile, "-tls-cert", certFile}, exitUsage, "-tls-cert and -tls-key go together"},
		{"missing CA file", []string{"-tls-ca", filepath.Join(dir, "none.pem")}, exitUsage, "-tls-ca"},
		{"CA file of no certificate", []string{"-tls-ca", keyFile}, exitUsage, "holds no PEM certificate"},
		// Before, exit 3 after the whole -timeout: "no session: context deadline exceeded".
		{"no TLS flags", nil, exitUnreachable, "is this its secure client port?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"ls", "-zk", zkFlag, "-timeout", "20s"}, tc.args...)
			start := time.Now()
			tierlock(t, append(args, "/tls/job")...).want(t, tc.code, tc.says)
			t.Logf("exit %d after %v", tc.code, time.Since(start).Round(time.Millisecond))
		})
	}
}

// -zk takes a chroot, as other clients' connection strings do: ls names
// the paths under it, and a chroot that does not exist is exit 5.
func TestInspectorInAChroot(t *testing.T) {
	s := connect(t)
	chroot := zktest.Path(t)
	ctx := zktest.Context(t, time.Minute)
	acquire(t, ctx, newLock(t, s, chroot+"/jobs/report", zklock.WithLabel("in-chroot")))
	zk := zktest.Servers(t)
	zk[len(zk)-1] += chroot
	tierlock(t, "ls", "-zk", joinComma(zk), "/jobs/report").want(t, exitOK, "in-chroot")
	tierlock(t, "ls", "-zk", joinComma(zk), "/jobs").want(t, exitOK, "report", "in-chroot", "1 lock, 1 held")
	tierlock(t, "ls", "-zk", zk[0]+chroot+"/missing", "/jobs").want(t, exitNoNode, chroot+"/missing does not exist")
}

func joinComma(s []string) string {
	out := s[0]
	for _, a := range s[1:] {
		out += "," + a
	}
	return out
}
