package correlate

import "testing"

func TestRouterPatternsThenHeuristics(t *testing.T) {
	r, err := NewRouter([]string{"/api/users/{id}/orders", "/static/**", "/files/*", "/"})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/api/users/alice/orders":   "/api/users/{id}/orders",
		"/api/users/42/orders":      "/api/users/{id}/orders",
		"/api/users//orders":        "/api/users//orders",           // an empty segment is no id
		"/api/users/alice/orders/1": "/api/users/alice/orders/{id}", // longer: heuristics
		"/static":                   "/static/**",
		"/static/css/site.css":      "/static/**",
		"/files/report":             "/files/*",
		"/files/a/b":                "/files/a/b",
		"/":                         "/",
		"/users/123":                "/users/{id}",
		"*":                         "*",
	} {
		if got := r.Route(path); got != want {
			t.Errorf("Route(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestRouterRejectsBadPatterns(t *testing.T) {
	for _, p := range []string{"api/x", "/a/**/b", "/a/b*"} {
		if _, err := NewRouter([]string{p}); err == nil {
			t.Errorf("NewRouter(%q): no error", p)
		}
	}
}

func TestNilRouterUsesHeuristics(t *testing.T) {
	var r *Router
	if got := r.Route("/users/42"); got != "/users/{id}" {
		t.Fatal(got)
	}
}
