package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// rotateCmd is "bmcjob rotate": a one-task rotateCredentials job
// (docs/credential-rotation.md). The new password is generated to the
// BMC's policy and stored in -credentials-file (pending, then current
// once a login with it worked); bmcjob never prints it, only the user
// name and where it is stored. Without -credentials-file there is nowhere
// to keep it, so the command refuses to run.
func rotateCmd(ctx context.Context, e *env, args []string) error {
	const synopsis = "-credentials-file FILE [-mode password|account] [-new-user NAME] [-role ROLE] -bmc URL [flags]"
	fs := newFlagSet(e, "rotate", synopsis)
	tf := addTargetFlags(fs, 10*time.Minute)
	mode := fs.String("mode", "password", "password: a new password for the account; account: a new account (blue/green), the old one deleted once the new one works")
	newUser := fs.String("new-user", "", "with -mode account: the new account's user name (default: the current one with a generation suffix, admin -> admin-2)")
	role := fs.String("role", "", "with -mode account: the new account's role (default: the old account's)")
	asJSON := fs.Bool("json", false, "print the job's final status as JSON (it holds no password)")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fs.Usage()
		return fmt.Errorf("rotate: takes no arguments; got %q", strings.Join(pos, " "))
	}
	if tf.credsFile == "" {
		return errors.New("rotate: -credentials-file is required: the file the new credentials are stored in (bmcjob never prints a password)")
	}
	a := task.RotateCredentialsAction{Mode: task.RotationMode(*mode), UserName: *newUser, Role: *role}
	ts := task.Spec{RotateCredentials: &a}
	if err := ts.Validate(); err != nil {
		// The spec's field, in the flag's name.
		flagOf := map[string]string{"rotateCredentials.mode": "-mode", "rotateCredentials.userName": "-new-user", "rotateCredentials.role": "-role"}
		var fe *task.FieldError
		if errors.As(err, &fe) && flagOf[fe.Path] != "" {
			return fmt.Errorf("%s: %s", flagOf[fe.Path], fe.Msg)
		}
		return err
	}
	return runTasksNoted(ctx, e, tf, *asJSON, func(j job.Job) string {
		user := ""
		if r := j.Status.Tasks[0].Rotation; r != nil {
			user = r.UserName
		}
		return fmt.Sprintf("the new credentials of user %q are in %s as %q (-credentials-file, -credentials-ref)", user, tf.credsFile, j.Spec.CredentialsRef)
	}, ts)
}
