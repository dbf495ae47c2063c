package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrTooLarge is wrapped by every error about a limit of [Limits]: the input
// is refused for its size or shape before it is decoded.
var ErrTooLarge = errors.New("input exceeds a limit")

// Limits bound what DecodeLimited accepts, so memory is bounded by the
// limits and not by the input. Zero fields mean no limit.
type Limits struct {
	// Bytes is the most input, in bytes.
	Bytes int
	// String is the longest string (key or value), in bytes of JSON text.
	String int
	// Array is the most elements of any one array.
	Array int
	// Depth is the deepest nesting of objects and arrays.
	Depth int
}

// DecodeLimited checks data against lim, then decodes it strictly as
// [Decode] does. The check is one pass over the tokens that keeps nothing
// but the current path: a 22 MB array of a million elements is refused at
// its first element past lim.Array, having held one token at a time. Its
// errors wrap ErrTooLarge and name the JSON path and the limit, e.g.
// `tasks: more than 100 elements (at most 100)`.
func DecodeLimited(data []byte, v any, lim Limits) error {
	if err := Check(data, lim); err != nil {
		return err
	}
	return Decode(data, v)
}

// Check is DecodeLimited's check alone. Malformed JSON is left to the
// decoder (Check returns nil for it, unless a limit is hit first).
func Check(data []byte, lim Limits) error {
	if lim.Bytes > 0 && len(data) > lim.Bytes {
		return fmt.Errorf("%w: %s, at most %s", ErrTooLarge, Size(int64(len(data))), Size(int64(lim.Bytes)))
	}
	// One frame per open object or array: the key or index being read.
	type frame struct {
		array bool
		n     int    // elements seen (arrays)
		key   string // current key (objects), truncated
		atKey bool   // objects: the next string is a key
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for i, f := range stack {
			switch {
			case f.array:
				b.WriteString("[" + strconv.Itoa(f.n-1) + "]")
			case i > 0:
				b.WriteString("." + f.key)
			default:
				b.WriteString(f.key)
			}
		}
		if b.Len() == 0 {
			return "the document"
		}
		return b.String()
	}
	// arrayPath names an array (the frame below its elements).
	arrayPath := func() string {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		p := path()
		stack = append(stack, top)
		return p
	}
	// value marks a value read in the current frame.
	value := func() error {
		if len(stack) == 0 {
			return nil
		}
		f := &stack[len(stack)-1]
		if f.array {
			f.n++
			if lim.Array > 0 && f.n > lim.Array {
				return fmt.Errorf("%w: %s: more than %d elements (at most %d)", ErrTooLarge, arrayPath(), lim.Array, lim.Array)
			}
		} else {
			f.atKey = true
		}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers stay text: no float parsing, no precision loss
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil // malformed: the decoder says what is wrong
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				// The container itself is a value of its parent.
				if len(stack) > 0 && stack[len(stack)-1].array {
					if err := value(); err != nil {
						return err
					}
				}
				if lim.Depth > 0 && len(stack) >= lim.Depth {
					return fmt.Errorf("%w: %s: nested deeper than %d levels", ErrTooLarge, path(), lim.Depth)
				}
				stack = append(stack, frame{array: t == '[', atKey: t == '{'})
			case '}', ']':
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && !stack[len(stack)-1].array {
					stack[len(stack)-1].atKey = true
				}
			}
		case string:
			if len(stack) > 0 && !stack[len(stack)-1].array && stack[len(stack)-1].atKey {
				f := &stack[len(stack)-1]
				f.key, f.atKey = truncateKey(t), false
				if lim.String > 0 && len(t) > lim.String {
					return fmt.Errorf("%w: %s: a key of %d bytes (at most %d)", ErrTooLarge, path(), len(t), lim.String)
				}
				continue
			}
			if err := value(); err != nil {
				return err
			}
			if lim.String > 0 && len(t) > lim.String {
				return fmt.Errorf("%w: %s: a string of %d bytes (at most %d)", ErrTooLarge, path(), len(t), lim.String)
			}
		default:
			if err := value(); err != nil {
				return err
			}
		}
	}
}

func truncateKey(k string) string {
	if len(k) > 64 {
		return k[:64] + "..."
	}
	return k
}

// ReadAll reads r to its end, or refuses it (wrapping ErrTooLarge, naming
// the limit) once it holds more than max bytes, having read max+1. It is the
// reader for specs from files and stdin: "more than 1 MiB" instead of the
// "unexpected end of JSON input" of a silently cut read.
func ReadAll(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: larger than the limit of %s", ErrTooLarge, Size(max))
	}
	return data, nil
}

// Size formats n bytes for a message: "512 bytes", "64 KiB", "22.0 MiB".
func Size(n int64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + " bytes"
	case n < 1<<20 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	case n < 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	case n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	default:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
}

// validator is a decoded document that checks itself (a job or rollout
// spec).
type validator interface{ Validate() error }

// DecodeValid decodes data into a new T as DecodeLimited does, then runs
// its Validate. A decoding error wraps invalid (the caller's "invalid
// spec" error); Validate's error is returned as it is.
func DecodeValid[T any, PT interface {
	*T
	validator
}](data []byte, lim Limits, invalid error) (T, error) {
	var v T
	if err := DecodeLimited(data, &v, lim); err != nil {
		var zero T
		return zero, fmt.Errorf("%w: %v", invalid, err)
	}
	if err := PT(&v).Validate(); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// ReadValid reads at most lim.Bytes from r (ReadAll) and decodes what it
// read as DecodeValid does.
func ReadValid[T any, PT interface {
	*T
	validator
}](r io.Reader, lim Limits, invalid error) (T, error) {
	data, err := ReadAll(r, int64(lim.Bytes))
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%w: %v", invalid, err)
	}
	return DecodeValid[T, PT](data, lim, invalid)
}
