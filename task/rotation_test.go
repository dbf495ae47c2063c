package task_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/task"
)

func TestRotateCredentialsActionValidate(t *testing.T) {
	for _, c := range []struct {
		a                task.RotateCredentialsAction
		wantPath, wantIn string
	}{
		{task.RotateCredentialsAction{}, "", ""},
		{task.RotateCredentialsAction{Mode: task.RotationPassword}, "", ""},
		{task.RotateCredentialsAction{Mode: task.RotationAccount, UserName: "ops-2", Role: "Operator"}, "", ""},
		{task.RotateCredentialsAction{Mode: "blue-green"}, "rotateCredentials.mode", `"blue-green" is not one of password, account`},
		{task.RotateCredentialsAction{UserName: "x"}, "rotateCredentials.userName", "for mode account"},
		{task.RotateCredentialsAction{Role: "Operator"}, "rotateCredentials.userName", "for mode account"},
		{task.RotateCredentialsAction{Mode: task.RotationAccount, UserName: "a b"}, "rotateCredentials.userName", "no spaces"},
		{task.RotateCredentialsAction{Mode: task.RotationAccount, UserName: strings.Repeat("u", 65)}, "rotateCredentials.userName", "at most 64"},
		{task.RotateCredentialsAction{Mode: task.RotationAccount, Role: strings.Repeat("r", 65)}, "rotateCredentials.role", "at most 64"},
	} {
		s := task.Spec{RotateCredentials: &c.a}
		err := s.Validate()
		if c.wantIn == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.a, err)
			}
			continue
		}
		var fe *task.FieldError
		if !errors.As(err, &fe) || fe.Path != c.wantPath || !strings.Contains(fe.Msg, c.wantIn) {
			t.Errorf("%+v: got %v, want %s: ...%s...", c.a, err, c.wantPath, c.wantIn)
		}
	}
	s := task.Spec{RotateCredentials: &task.RotateCredentialsAction{Mode: task.RotationAccount}}
	if s.Action() != "rotateCredentials" || s.Describe() != "rotate credentials (account)" {
		t.Errorf("Action %q, Describe %q", s.Action(), s.Describe())
	}
}
