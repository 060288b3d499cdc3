package taskring

import "testing"

func TestZnodeDataIsPythonsJSON(t *testing.T) {
	// What sdk/python/taskring/_registration.py znode_data writes for the same input.
	want := `{"address":"10.0.0.5:7100","namespace":"shop","task_types":["cancel_order","send_email"],"max_in_flight":64,"pid":4242}`
	got := string(znodeData(registrationData{
		Address: "10.0.0.5:7100", Namespace: "shop", TaskTypes: []string{"cancel_order", "send_email"}, MaxInFlight: 64, PID: 4242,
	}))
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestParseZKConnect(t *testing.T) {
	cases := []struct {
		in      string
		servers int
		chroot  string
		bad     bool
	}{
		{"127.0.0.1:22181", 1, "", false},
		{"127.0.0.1:22181/taskring", 1, "/taskring", false},
		{"zk1:2181,zk2:2181/a/b/", 2, "/a/b", false},
		{"zk1:2181/", 1, "", false},
		{"/taskring", 0, "", true},
		{"zk1:2181/a//b", 0, "", true},
	}
	for _, c := range cases {
		got, err := parseZKConnect(c.in)
		if (err != nil) != c.bad {
			t.Errorf("%q: err %v", c.in, err)
			continue
		}
		if !c.bad && (len(got.servers) != c.servers || got.chroot != c.chroot) {
			t.Errorf("%q: got %+v", c.in, got)
		}
	}
}
