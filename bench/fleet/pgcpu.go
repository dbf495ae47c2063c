package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100
// on Linux).
const clockTick = 10 * time.Millisecond

// procStat reads a process's parent and its CPU time (user + system; with
// children, that of its reaped children too) from /proc/<pid>/stat.
func procStat(pid int, children bool) (ppid int, cpu time.Duration, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return 0, 0, false
	}
	num := func(k int) int64 { n, _ := strconv.ParseInt(f[k], 10, 64); return n }
	ticks := num(11) + num(12) // utime, stime
	if children {
		ticks += num(13) + num(14) // cutime, cstime
	}
	return int(num(1)), time.Duration(ticks) * clockTick, true
}

// serverCPU returns a function reporting the CPU time used so far by the
// PostgreSQL cluster db is connected to (its postmaster, found as the parent
// of this connection's backend, and every child of it), when the server
// runs on this machine and /proc shows it; nil otherwise.
func serverCPU(ctx context.Context, db *sql.DB) func() time.Duration {
	var backend int
	if err := db.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return nil
	}
	pm, _, ok := procStat(backend, false)
	if !ok || pm <= 1 {
		return nil
	}
	return func() time.Duration {
		_, total, _ := procStat(pm, true)
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return total
		}
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == pm {
				continue
			}
			if ppid, cpu, ok := procStat(pid, false); ok && ppid == pm {
				total += cpu
			}
		}
		return total
	}
}
