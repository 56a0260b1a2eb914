package tool

import "fmt"

// UsageError is a bad command line: Main prints it with the command's usage
// and exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef is a UsageError with a message formatted as by fmt.Sprintf.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ConnectError is a store that could not be reached: Main exits 3.
type ConnectError struct{ Err error }

func (e *ConnectError) Error() string { return e.Err.Error() }

func (e *ConnectError) Unwrap() error { return e.Err }
