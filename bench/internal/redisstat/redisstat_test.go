package redisstat

import (
	"bufio"
	"context"
	"net"
	"os"
	"testing"
	"time"
)

func TestParseCPU(t *testing.T) {
	got, err := parseCPU("# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9\r\n")
	if err != nil || got != 3750*time.Millisecond {
		t.Fatalf("parseCPU = %v, %v; want 3.75s", got, err)
	}
	if _, err := parseCPU("# CPU\r\nused_cpu_sys:1\r\n"); err == nil {
		t.Error("a section without used_cpu_user parsed")
	}
}

// TestMonitorCountsClientCommands needs a Redis (AGENTD_TEST_REDIS, as
// scripts/redis.sh with sets it): three client commands, one of them a script issuing
// two more, count three.
func TestMonitorCountsClientCommands(t *testing.T) {
	u := os.Getenv("AGENTD_TEST_REDIS")
	if u == "" {
		t.Skip("AGENTD_TEST_REDIS is not set")
	}
	addr, err := Addr(u)
	if err != nil {
		t.Fatal(err)
	}
	before, err := CPU(addr)
	if err != nil || before <= 0 {
		t.Fatalf("CPU = %v, %v", before, err)
	}
	m, err := StartMonitor(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for _, cmd := range []string{
		"SET redisstat-test 1\r\n",
		"EVAL \"redis.call('SET', KEYS[1], 2); return redis.call('GET', KEYS[1])\" 1 redisstat-test\r\n",
		"DEL redisstat-test\r\n",
	} {
		if _, err := conn.Write([]byte(cmd)); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line[0] == '$' { // the script's bulk answer
			if _, err := r.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
	}
	// MONITOR lines arrive asynchronously: wait for the three, then a moment for any
	// script command wrongly counted.
	for deadline := time.Now().Add(5 * time.Second); m.n.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if n := m.Stop(); n != 3 {
		t.Errorf("counted %d commands, want 3", n)
	}
}
