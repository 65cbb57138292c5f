package bundle

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	opabundle "github.com/open-policy-agent/opa/v1/bundle"
)

// VerificationKey returns the verification config of a key, given as OPA's
// --verification-key reads it: a PEM public key or certificate (RSA: RS256; ECDSA:
// ES256, ES384 or ES512 by its curve), or anything else as the shared secret of HS256.
// keyID "" means DefaultKeyID; a bundle's JWT must name the same key id (or none).
func VerificationKey(key []byte, keyID string) (*opabundle.VerificationConfig, error) {
	if keyID == "" {
		keyID = DefaultKeyID
	}
	alg, err := algorithmOf(key)
	if err != nil {
		return nil, err
	}
	keys := map[string]*opabundle.KeyConfig{keyID: {Key: string(key), Algorithm: alg}}
	return opabundle.NewVerificationConfig(keys, keyID, "", nil), nil
}

// algorithmOf is the JWS algorithm a verification key implies.
func algorithmOf(key []byte) (string, error) {
	block, _ := pem.Decode(key)
	if block == nil {
		if len(key) == 0 {
			return "", fmt.Errorf("empty verification key")
		}
		return "HS256", nil
	}
	var pub any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		pub, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			pub = cert.PublicKey
		}
	default:
		return "", fmt.Errorf("verification key: a PEM %q block; want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE", block.Type)
	}
	if err != nil {
		return "", fmt.Errorf("verification key: %w", err)
	}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return "RS256", nil
	case *ecdsa.PublicKey:
		switch k.Curve.Params().BitSize {
		case 256:
			return "ES256", nil
		case 384:
			return "ES384", nil
		case 521:
			return "ES512", nil
		}
	}
	return "", fmt.Errorf("verification key: unsupported key type %T", pub)
}
