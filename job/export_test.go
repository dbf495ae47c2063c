package job

// SimulateCrashOnStop makes r leave its BMC locks in place when stopped, as
// a runner that died would.
func SimulateCrashOnStop(r *Runner) { r.abandonOnStop = true }
