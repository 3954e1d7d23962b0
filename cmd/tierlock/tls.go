package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/go-zookeeper/zk"
)

// TLS to the servers' secure client port: the flags and the configuration
// they make. There is no flag to skip the check of the server's
// certificate: a throwaway CA is easy to make, and a session that trusts
// anyone hands its credentials (-digest) to anyone.

// tlsFlags are the TLS flags of every subcommand.
type tlsFlags struct {
	on         bool
	ca         string
	cert, key  string
	serverName string
}

func (f *tlsFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "tls", false, "TLS to the servers' secure client port, trusting the system's CAs (implied by the -tls-* flags)")
	fs.StringVar(&f.ca, "tls-ca", os.Getenv("TIERLOCK_TLS_CA"), "PEM file of the CA that signed the servers' certificates ($TIERLOCK_TLS_CA)")
	fs.StringVar(&f.cert, "tls-cert", os.Getenv("TIERLOCK_TLS_CERT"), "PEM file of a client certificate, for servers that ask for one (ssl.clientAuth) and x509 ACLs ($TIERLOCK_TLS_CERT)")
	fs.StringVar(&f.key, "tls-key", os.Getenv("TIERLOCK_TLS_KEY"), "PEM file of the client certificate's key ($TIERLOCK_TLS_KEY)")
	fs.StringVar(&f.serverName, "tls-server-name", "", "the name the servers' certificates must carry (default: the host given in -zk)")
}

// config returns the TLS configuration the flags ask for, or nil when
// they ask for none.
func (f *tlsFlags) config() (*tls.Config, error) {
	if !f.on && f.ca == "" && f.cert == "" && f.key == "" && f.serverName == "" {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: f.serverName}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, fmt.Errorf("%w: -tls-ca: %w", errUsage, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: -tls-ca %s holds no PEM certificate", errUsage, f.ca)
		}
	}
	if (f.cert == "") != (f.key == "") {
		return nil, fmt.Errorf("%w: -tls-cert and -tls-key go together", errUsage)
	}
	if f.cert != "" {
		cert, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("%w: -tls-cert, -tls-key: %w", errUsage, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// tlsRefused reports whether err is the servers' refusal of the TLS
// handshake, or this side's of their certificates, or TLS spoken to a
// plain client (zklock.Connect fails with zk.ErrNoServer when every
// server refused): a server that cannot be used, as one that cannot be
// reached.
func tlsRefused(err error) bool {
	var verify *tls.CertificateVerificationError
	var remote *net.OpError
	return errors.As(err, &verify) || (errors.As(err, &remote) && remote.Op == "remote error") || errors.Is(err, zk.ErrNoServer)
}
