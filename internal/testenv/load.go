package testenv

import (
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// IdleCores is how many of the machine's cores its load leaves idle now
// (the cores minus the one-minute load average, rounded up), at most
// most: how many CPU burners a test that wants every core busy starts.
// Without /proc/loadavg it is most.
func IdleCores(most int) int {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return most
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return most
	}
	load, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return most
	}
	return idle(runtime.NumCPU(), load, most)
}

func idle(cores int, load float64, most int) int {
	return min(most, max(0, cores-int(math.Floor(load))))
}
