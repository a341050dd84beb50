package stores

import (
	"fmt"
	"os"
)

// Holder names this process in the records it claims: its host and pid.
func Holder() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s pid %d", host, os.Getpid())
}
