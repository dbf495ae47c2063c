// Package testbin finds the external programs some tests run against
// (ipmitool, OpenIPMI's ipmi_sim) with the repository's policy for missing
// ones.
//
// # Policy
//
// [Require] returns the program's path. When it is missing the test skips
// with a message naming the Debian package to install, unless the
// environment variable CI is "true": CI installs every program the tests
// need (scripts/test.sh), so there a missing one fails the test.
package testbin
