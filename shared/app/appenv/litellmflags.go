package appenv

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strconv"
)

// litellmFlags are LiteLLM's proxy CLI flags (`litellm --config c.yaml
// --port 4000`), accepted by the gateway in local mode so that the command
// a LiteLLM user runs keeps working: -port and -host set the listen
// address (over -addr's parts), -detailed_debug and -debug the log level;
// -num_workers has no meaning here and is noted at start.
type litellmFlags struct {
	port, workers        int
	host                 string
	debug, detailedDebug bool
}

func (f *litellmFlags) declare(fs *flag.FlagSet) {
	fs.IntVar(&f.port, "port", 0, "LiteLLM's flag: the port to listen on in local mode (over -addr's port)")
	fs.StringVar(&f.host, "host", "", "LiteLLM's flag: the host to listen on in local mode (over -addr's host; LiteLLM's default is 0.0.0.0, this one's 127.0.0.1)")
	fs.IntVar(&f.workers, "num_workers", 0, "LiteLLM's flag: ignored (one Go process serves every request; Lambda scales by instances)")
	fs.BoolVar(&f.debug, "debug", false, "LiteLLM's flag: log at debug level (as LOG_LEVEL=debug)")
	fs.BoolVar(&f.detailedDebug, "detailed_debug", false, "LiteLLM's flag: log at debug level (as LOG_LEVEL=debug)")
}

// apply folds the flags given into s.
func (f *litellmFlags) apply(s *Settings) error {
	if f.port != 0 || f.host != "" {
		host, port, err := net.SplitHostPort(s.Addr)
		if err != nil {
			return fmt.Errorf("-addr %q: %w", s.Addr, err)
		}
		if f.port != 0 {
			if f.port < 0 || f.port > 65535 {
				return fmt.Errorf("-port %d: want 1 to 65535", f.port)
			}
			port = strconv.Itoa(f.port)
		}
		if f.host != "" {
			host = f.host
		}
		s.Addr = net.JoinHostPort(host, port)
	}
	if f.debug || f.detailedDebug {
		s.LogLevel = slog.LevelDebug
	}
	if f.workers != 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("-num_workers %d ignored: one Go process serves every request (Lambda scales by instances)", f.workers))
	}
	return nil
}
