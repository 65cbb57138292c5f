package op

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on a denial's text; they keep what a guard can put into logs, records and
// responses small.
const (
	MaxDenialCodeLen   = 64
	MaxDenialReasonLen = 512
)

// Denial is a guard's intentional "no": the policy decided the operation must not run.
// It is distinct from a *GuardError, which means the guard itself failed. Both block.
type Denial struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// Error renders the denial as "denied (<code>): <reason>".
func (d *Denial) Error() string {
	if d == nil {
		return "denied"
	}
	return "denied (" + d.Code + "): " + d.Reason
}

// InvalidDenialError reports a denial whose code or reason breaks the rules of
// NewDenial. Field is "code" or "reason". It is deliberately not a *Denial: a guard that
// returns it has failed, and the runner reports a *GuardError.
type InvalidDenialError struct {
	Field  string
	Reason string
}

func (e *InvalidDenialError) Error() string {
	return "op: invalid denial " + e.Field + ": " + e.Reason
}

// NewDenial validates code and reason and returns the denial. The code is a lowercase
// ASCII identifier ([a-z][a-z0-9_]*, at most 64 bytes); the reason is valid UTF-8, at
// most 512 bytes, not blank and free of control characters. Use it where denials are
// built ahead of time, so a bad text fails at load rather than when a guard fires.
func NewDenial(code, reason string) (*Denial, error) {
	if err := validateDenial(code, reason); err != nil {
		return nil, err
	}
	return &Denial{Code: code, Reason: reason}, nil
}

// Deny returns a validated *Denial for a guard to return. If code or reason is invalid
// it returns an *InvalidDenialError instead, so the guard fails closed with a
// *GuardError rather than issuing a denial with unchecked text.
func Deny(code, reason string) error {
	d, err := NewDenial(code, reason)
	if err != nil {
		return err
	}
	return d
}

// AsDenial reports whether err is, or wraps, a *Denial.
func AsDenial(err error) (*Denial, bool) {
	var d *Denial
	if errors.As(err, &d) && d != nil {
		return d, true
	}
	return nil, false
}

func validateDenial(code, reason string) *InvalidDenialError {
	if msg := checkCode(code); msg != "" {
		return &InvalidDenialError{Field: "code", Reason: msg}
	}
	if msg := checkReason(reason); msg != "" {
		return &InvalidDenialError{Field: "reason", Reason: msg}
	}
	return nil
}

func checkCode(code string) string {
	if code == "" {
		return "required"
	}
	if len(code) > MaxDenialCodeLen {
		return "longer than " + strconv.Itoa(MaxDenialCodeLen) + " bytes"
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		lower := c >= 'a' && c <= 'z'
		if !lower && (i == 0 || (c != '_' && (c < '0' || c > '9'))) {
			return "must match [a-z][a-z0-9_]*"
		}
	}
	return ""
}

func checkReason(reason string) string {
	if len(reason) > MaxDenialReasonLen {
		return "longer than " + strconv.Itoa(MaxDenialReasonLen) + " bytes"
	}
	if strings.TrimSpace(reason) == "" {
		return "required"
	}
	return checkText(reason)
}

// checkText rejects invalid UTF-8 and control characters (C0, DEL, C1, including tab
// and newline). It returns a reason, or "" when the text is acceptable.
func checkText(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return "contains a control character"
	}
	return ""
}
