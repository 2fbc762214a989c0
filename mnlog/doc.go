// Package mnlog prints Mininet's progress and result lines at Mininet's
// verbosity levels (debug, info, output, warning, error, critical). Like
// Mininet's logger it adds no newline of its own, so callers write exactly
// the text scripts expect ("*** Adding hosts:\nh1 h2 \n").
//
// It is public so that Go programs and tests outside this module can turn
// the same output on: pass a logger as hymn.Options.Log (for example
// mnlog.New(os.Stderr, mnlog.Info)). A nil *Logger discards everything, so
// leaving the option unset keeps a library user's output quiet.
package mnlog
