// Package sysroots makes crypto/x509 load the system's root certificates
// from the CA bundle file alone.
//
// On Linux, x509.SystemCertPool (the roots of every TLS connection made
// without its own RootCAs: AWS, the upstreams) reads the first CA bundle
// file it finds, then every file in /etc/ssl/certs and /etc/pki/tls/certs
// too. On Amazon Linux 2023 (provided.al2023) those directories hold the
// same ~140 roots again, one file each, and the bundle twice more, all
// parsed at the first TLS handshake: https://go.dev/issue/79018. Here that
// is ~33 ms of CPU against ~9.5 ms for the bundle alone (x509.SystemCertPool
// on Debian, whose /etc/ssl/certs repeats its bundle the same way); in
// Lambda at 256 MB (0.145 vCPU) the difference is ~150 ms of wall time at
// the first HTTPS call, which in the deployed configuration is init's SSM
// read.
package sysroots

import (
	"io/fs"
	"os"
)

// bundles are the CA bundle files crypto/x509 looks for on Linux, in its
// order (crypto/x509/root_linux.go).
var bundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian/Ubuntu/Gentoo etc.
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora/RHEL 6, Amazon Linux
	"/etc/ssl/ca-bundle.pem",                            // OpenSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS/RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine Linux
}

// NoDir is the SSL_CERT_DIR FromBundle sets: a directory that does not
// exist, which crypto/x509 skips without an error.
const NoDir = "/nonexistent/sluice-roots-from-SSL_CERT_FILE"

// FromBundle sets SSL_CERT_FILE to the first CA bundle file of crypto/x509's
// list that exists and is not empty, and SSL_CERT_DIR to NoDir, so that
// the system roots are that bundle's; it returns the bundle. It does
// nothing, and returns "", when SSL_CERT_FILE or SSL_CERT_DIR is set (the
// operator's choice) or no bundle is found (the directories may then be
// all there is). Call it before the first TLS connection: crypto/x509
// reads the variables once.
func FromBundle() string {
	return fromBundle(os.Getenv, os.Setenv, os.Stat, bundles)
}

func fromBundle(getenv func(string) string, setenv func(string, string) error, stat func(string) (fs.FileInfo, error), files []string) string {
	if getenv("SSL_CERT_FILE") != "" || getenv("SSL_CERT_DIR") != "" {
		return ""
	}
	for _, f := range files {
		fi, err := stat(f) // through symlinks: Amazon Linux's bundle is one
		if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
			continue
		}
		if setenv("SSL_CERT_FILE", f) != nil || setenv("SSL_CERT_DIR", NoDir) != nil {
			return ""
		}
		return f
	}
	return ""
}
