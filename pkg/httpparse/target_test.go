package httpparse

import "testing"

func TestSplitTarget(t *testing.T) {
	cases := []struct {
		target, path, query string
	}{
		{"/", "/", ""},
		{"/a/b", "/a/b", ""},
		{"/a/b?x=1&y=2", "/a/b", "x=1&y=2"},
		{"/a?", "/a", ""},
		{"/a?q#frag", "/a", "q"},
		{"/a#frag?not-query", "/a", ""},
		{"http://example.com/a/b?x=1", "/a/b", "x=1"},
		{"HTTPS://example.com:8443/p", "/p", ""},
		{"http://example.com", "/", ""},
		{"http://example.com?x=1", "/", "x=1"},
		{"http://user@example.com:80/p?q", "/p", "q"},
		{"http://example.com#f", "/", ""},
		{"example.com:443", "", ""},
		{"[::1]:443", "", ""},
		{"*", "*", ""},
		{"", "", ""},
		{"1http://x/p", "1http://x/p", ""},
		{"weird/relative?q", "weird/relative", "q"},
	}
	for _, c := range cases {
		path, query := SplitTarget(c.target)
		if path != c.path || query != c.query {
			t.Errorf("SplitTarget(%q) = %q, %q; want %q, %q", c.target, path, query, c.path, c.query)
		}
	}
}

func TestSplitTargetDoesNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		SplitTarget("http://example.com/a/b?x=1")
		SplitTarget("/a/b?x=1")
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}
