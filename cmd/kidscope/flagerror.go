package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError turns the flag parser's errors into kidscope's one form,
// `--flag "value": what it wants`, instead of Go's parse errors
// ("strconv.ParseInt: parsing …"); main.go adds the usage line.
func flagError(_ *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return usageError(err)
	}
	value, cause := bad.GetValue(), bad.Unwrap()
	want := cause.Error()
	var num *strconv.NumError
	switch {
	case errors.As(cause, &num) && num.Func == "ParseBool":
		want = "want true or false"
	case errors.As(cause, &num) && errors.Is(num.Err, strconv.ErrRange):
		want = "out of range"
	case errors.As(cause, &num):
		want = "want a whole number"
	case strings.HasPrefix(want, "time: "):
		want = "want a duration such as 90s, 10m or 1h30m"
	default:
		// The flag's own values (sizes) name the value themselves.
		want = strings.TrimPrefix(want, strconv.Quote(value)+": ")
	}
	return usageError(fmt.Errorf("--%s %q: %s", bad.GetFlag().Name, value, want))
}
