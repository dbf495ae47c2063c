package task

import "strings"

// RotationMode says how a rotateCredentials task changes the credentials.
//
// +kubebuilder:validation:Enum=password;account
type RotationMode string

// Rotation modes.
const (
	// RotationPassword changes the password of the account the job logs
	// in with.
	RotationPassword RotationMode = "password"
	// RotationAccount is a blue/green rotation: a new account is created
	// with a new user name, proven by a login, promoted, and then the old
	// account is deleted.
	RotationAccount RotationMode = "account"
)

// RotateCredentialsAction rotates the credentials the job logs in with
// (docs/credential-rotation.md). The job's credentials resolver must be a
// bmc.CredentialsStore: the new credentials are stored there as pending
// before the BMC is changed, proven by a new login, then promoted to
// current. The spec never carries a password: the task generates one to
// the BMC's password policy (bmc.GeneratePassword), or uses the pending
// credentials the store already holds. A BMC without account management,
// or a resolver that is not a store, fails the job's preflight with reason
// NotSupported before anything was sent.
type RotateCredentialsAction struct {
	// Mode is password (the default) or account.
	Mode RotationMode `json:"mode,omitempty"`
	// UserName is the new account's user name (account mode only).
	// Defaults to the current user name with a generation suffix ("admin"
	// becomes "admin-2", "admin-2" becomes "admin-3").
	//
	// +kubebuilder:validation:MaxLength=64
	UserName string `json:"userName,omitempty"`
	// Role is the new account's role (account mode only): a Redfish RoleId
	// such as Administrator. Defaults to the old account's role.
	//
	// +kubebuilder:validation:MaxLength=64
	Role string `json:"role,omitempty"`
}

// RotationModeOrDefault is Mode, or RotationPassword when it is empty.
func (a *RotateCredentialsAction) RotationModeOrDefault() RotationMode {
	if a.Mode == "" {
		return RotationPassword
	}
	return a.Mode
}

func (a *RotateCredentialsAction) describe() string {
	return "rotate credentials (" + string(a.RotationModeOrDefault()) + ")"
}

func (a *RotateCredentialsAction) validate(path string) error {
	switch a.RotationModeOrDefault() {
	case RotationPassword:
		if a.UserName != "" || a.Role != "" {
			return fieldErr(path, "userName", "userName and role are for mode account; mode password keeps the account")
		}
	case RotationAccount:
	default:
		return fieldErr(path, "mode", "%q is not one of password, account", truncate(string(a.Mode), 80))
	}
	if len(a.UserName) > 64 || strings.ContainsAny(a.UserName, " :\t\r\n") {
		return fieldErr(path, "userName", "%q: want at most 64 bytes, no spaces or colons", truncate(a.UserName, 80))
	}
	if len(a.Role) > 64 {
		return fieldErr(path, "role", "%d bytes, at most 64", len(a.Role))
	}
	return nil
}

// Rotation stages, in order (RotationStatus.Stage).
const (
	// RotationChangeSent: the change (new password, new account) is about
	// to be sent, or was.
	RotationChangeSent = "ChangeSent"
	// RotationProven: a new session logged in with the new credentials.
	RotationProven = "Proven"
	// RotationPromoted: the new credentials are the current ones; account
	// mode deletes the old account next.
	RotationPromoted = "Promoted"
	// RotationDone: the rotation is complete.
	RotationDone = "Done"
)

// RotationStatus is what a rotateCredentials task stored: its stage, and
// the accounts it works on. Never a password.
type RotationStatus struct {
	// Stage is the last stage reached: ChangeSent (the new credentials are
	// pending in the credentials store; the change is sent next), Proven,
	// Promoted, Done. A stage is stored before the BMC request it leads to.
	Stage string `json:"stage,omitempty"`
	// UserName is the user name of the new credentials (account mode: the
	// new account's).
	UserName string `json:"userName,omitempty"`
	// OldUserName is the user name the job logged in with before.
	OldUserName string `json:"oldUserName,omitempty"`
	// OldAccountID is the ID on the BMC of the account of OldUserName.
	OldAccountID string `json:"oldAccountID,omitempty"`
}
