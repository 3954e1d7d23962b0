package zkserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// TLS: a secure client port beside the plain one (ZooKeeper 3.5+, served
// by Netty), with certificates from a throwaway CA made by the test.
// ZooKeeper 3.8 reads PEM key and trust stores (ssl.keyStore.type=PEM),
// so neither keytool nor PKCS12 is needed.

// nettyJars are what Netty needs beyond the jars zookeeper.jar's manifest
// names (Debian leaves them out: without them every secure connection
// fails with NoClassDefFoundError: io/netty/handler/codec/ByteToMessageDecoder).
var nettyJars = []string{"/usr/share/java/netty-codec.jar", "/usr/share/java/netty-resolver.jar"}

// nettyJars are the jars the classpath needs for TLS.
func (c *Cluster) nettyJars() []string {
	if c.cfg.tls == nil {
		return nil
	}
	return nettyJars
}

// CA is a throwaway certificate authority: it issues the servers'
// certificates (WithTLS) and the clients' that a test makes.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA's certificate, what a client trusts.
	PEM []byte
}

// NewCA makes a CA named name, valid for a day.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("zkserver: CA key: %w", err)
	}
	tmpl := template(pkix.Name{CommonName: name})
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("zkserver: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("zkserver: CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Pool returns a pool holding the CA, for tls.Config.RootCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Cert is a certificate the CA issued and its key, in PEM.
type Cert struct{ CertPEM, KeyPEM []byte }

// TLS returns the certificate for tls.Config.Certificates.
func (c Cert) TLS() (tls.Certificate, error) { return tls.X509KeyPair(c.CertPEM, c.KeyPEM) }

// Issue makes a certificate for subject, good for servers and clients
// alike, naming hosts (IP addresses or DNS names) as its subject
// alternative names.
func (ca *CA) Issue(subject pkix.Name, hosts ...string) (Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Cert{}, fmt.Errorf("zkserver: key: %w", err)
	}
	tmpl := template(subject)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Cert{}, fmt.Errorf("zkserver: certificate for %s: %w", subject, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Cert{}, fmt.Errorf("zkserver: key: %w", err)
	}
	return Cert{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
	}, nil
}

var serial atomic.Int64

func template(subject pkix.Name) *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano() + serial.Add(1)), Subject: subject,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour)}
}

// TLS configures the servers' secure client port (WithTLS).
type TLS struct {
	// CA issues each server's certificate (for 127.0.0.1 and localhost)
	// and is the one CA the servers trust for client certificates.
	CA *CA
	// ClientAuth is ZooKeeper's ssl.clientAuth: "need" (its default: a
	// client without a certificate the CA issued is refused), "want" or
	// "none".
	ClientAuth string
	// Protocol is ZooKeeper's ssl.protocol: "" for its default (TLSv1.2
	// in 3.8; in 3.9, TLSv1.3), or "TLSv1.3", with which a server refuses
	// a client's certificate only after the handshake.
	Protocol string
}

// WithTLS makes every member serve a secure client port too
// (SecureAddr), with the x509 authentication provider, so that a client
// certificate is the connection's identity in ACLs: scheme "x509", id
// the certificate's subject, such as "CN=worker,O=tierlock".
func WithTLS(t TLS) Option { return func(c *config) { c.tls = &t } }

// writeTLS writes m's key store (its key and certificate) and trust store
// (the CA) and appends what zoo.cfg needs to b.
func (c *Cluster) writeTLS(m *member, b *strings.Builder) error {
	t := c.cfg.tls
	cert, err := t.CA.Issue(pkix.Name{CommonName: fmt.Sprintf("zookeeper member %d", m.id)}, "127.0.0.1", "localhost")
	if err != nil {
		return err
	}
	keys, trust := filepath.Join(m.dir, "keystore.pem"), filepath.Join(m.dir, "truststore.pem")
	if err := os.WriteFile(keys, append(cert.KeyPEM, cert.CertPEM...), 0o600); err != nil {
		return fmt.Errorf("zkserver: %w", err)
	}
	if err := os.WriteFile(trust, t.CA.PEM, 0o644); err != nil {
		return fmt.Errorf("zkserver: %w", err)
	}
	auth := t.ClientAuth
	if auth == "" {
		auth = "need"
	}
	fmt.Fprintf(b, "secureClientPort=%d\nsecureClientPortAddress=127.0.0.1\n", m.securePort)
	b.WriteString("serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n")
	fmt.Fprintf(b, "ssl.keyStore.location=%s\nssl.keyStore.type=PEM\n", keys)
	fmt.Fprintf(b, "ssl.trustStore.location=%s\nssl.trustStore.type=PEM\n", trust)
	fmt.Fprintf(b, "ssl.clientAuth=%s\n", auth)
	if t.Protocol == "TLSv1.3" { // 3.8's default cipher suites are TLS 1.2's
		b.WriteString("ssl.protocol=TLSv1.3\nssl.enabledProtocols=TLSv1.3\nssl.ciphersuites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384\n")
	} else if t.Protocol != "" {
		fmt.Fprintf(b, "ssl.protocol=%s\n", t.Protocol)
	}
	b.WriteString("authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n")
	return nil
}
