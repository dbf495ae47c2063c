package redfishtest

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// requestRate is the endpoint's request limit (Config.RequestLimit) and the
// measurement of the rate it receives. Guarded by Server.mu.
type requestRate struct {
	limit    float64
	bucket   *rate.Limiter // nil: unlimited
	arrivals []time.Time   // arrivals within the last second, oldest first
	peak     int           // most arrivals within any second
}

func (r *requestRate) setLimit(limit float64) {
	r.limit, r.bucket = 0, nil
	if limit > 0 {
		r.limit = limit
		r.bucket = rate.NewLimiter(rate.Limit(limit), max(1, int(math.Ceil(limit))))
	}
}

// admit records a request arriving at now and reports whether the limit
// lets it through, and the limit. Called with s.mu held.
func (s *Server) admit(now time.Time) (limit float64, ok bool) {
	r := &s.rate
	cut := now.Add(-time.Second)
	i := 0
	for i < len(r.arrivals) && !r.arrivals[i].After(cut) {
		i++
	}
	r.arrivals = append(r.arrivals[i:], now)
	r.peak = max(r.peak, len(r.arrivals))
	if r.bucket == nil {
		return 0, true
	}
	return r.limit, r.bucket.AllowN(now, 1)
}

// SetRequestLimit replaces Config.RequestLimit at run time (e.g. once the
// drivers are connected), with a full bucket; 0 or less removes the limit.
func (s *Server) SetRequestLimit(perSecond float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rate.setLimit(perSecond)
}

// OverLimit counts requests answered 503 because they exceeded the
// endpoint's request limit (Config.RequestLimit).
func (s *Server) OverLimit() int64 { return s.overLimit.Load() }

// PeakRate is the request rate of the busiest second so far: the most
// requests that arrived within any one second (Config.Clock), refused ones
// included. A client that keeps to the endpoint's limit shows a PeakRate at
// or below Config.RequestLimit, plus whatever burst it allows itself.
func (s *Server) PeakRate() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return float64(s.rate.peak)
}
