package op_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/engine/op"
)

func TestDeny_Code(t *testing.T) {
	for _, tc := range []struct {
		code  string
		valid bool
	}{
		{"trade_limit", true},
		{"a", true},
		{"rule_2_b", true},
		{"x" + strings.Repeat("9", op.MaxDenialCodeLen-1), true},
		{"x" + strings.Repeat("9", op.MaxDenialCodeLen), false},
		{"", false},
		{"Trade_limit", false},
		{"1limit", false},
		{"_limit", false},
		{"trade-limit", false},
		{"trade limit", false},
		{"tráde", false},
		{"trade.limit", false},
	} {
		t.Run(tc.code, func(t *testing.T) {
			checkDeny(t, tc.code, "a reason", tc.valid, "code")
		})
	}
}

func TestDeny_Reason(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason string
		valid  bool
	}{
		{"plain", "trades above 10000 need approval", true},
		{"unicode", "Limit überschritten — Freigabe nötig", true},
		{"at_limit", strings.Repeat("é", op.MaxDenialReasonLen/2), true},
		{"too_long", strings.Repeat("r", op.MaxDenialReasonLen+1), false},
		{"empty", "", false},
		{"blank", " \u00a0 ", false},
		{"newline", "line\nbreak", false},
		{"tab", "a\tb", false},
		{"nul", "a\x00b", false},
		{"del", "a\x7fb", false},
		{"c1_control", "a\u0085b", false},
		{"invalid_utf8", "a\xffb", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkDeny(t, "limit", tc.reason, tc.valid, "reason")
		})
	}
}

func checkDeny(t *testing.T, code, reason string, valid bool, field string) {
	t.Helper()
	err := op.Deny(code, reason)
	d, isDenial := op.AsDenial(err)
	built, newErr := op.NewDenial(code, reason)
	if valid {
		if !isDenial || d.Code != code || d.Reason != reason || newErr != nil || *built != *d {
			t.Fatalf("Deny = %v, NewDenial = (%v, %v); want a valid denial", err, built, newErr)
		}
		return
	}
	var bad *op.InvalidDenialError
	if isDenial || !errors.As(err, &bad) || bad.Field != field {
		t.Fatalf("Deny = %#v, want an *InvalidDenialError on %s and no *Denial", err, field)
	}
	if built != nil || !errors.As(newErr, &bad) {
		t.Fatalf("NewDenial = (%v, %v), want (nil, *InvalidDenialError)", built, newErr)
	}
}

func TestDenial_Error(t *testing.T) {
	err := op.Deny("trade_limit", "trades above 10000 need approval")
	if got, want := err.Error(), "denied (trade_limit): trades above 10000 need approval"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestAsHelpersRejectOtherErrors(t *testing.T) {
	for _, err := range []error{nil, errors.New("x"), &op.CallError{Field: "f", Reason: "r"}} {
		if _, ok := op.AsDenial(err); ok {
			t.Errorf("AsDenial(%v) = true", err)
		}
		if _, ok := op.AsGuardError(err); ok {
			t.Errorf("AsGuardError(%v) = true", err)
		}
	}
}
