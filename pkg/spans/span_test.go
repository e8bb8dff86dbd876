package spans

import "testing"

func TestIsError(t *testing.T) {
	cases := []struct {
		kind   Kind
		status int
		errTyp string
		want   bool
	}{
		{KindServer, 200, "", false},
		{KindServer, 404, "", false},
		{KindServer, 503, "", true},
		{KindClient, 404, "", true},
		{KindClient, 200, "", false},
		{KindServer, 0, "timeout", true},
	}
	for _, c := range cases {
		s := Span{Kind: c.kind, StatusCode: c.status, ErrorType: c.errTyp}
		if got := s.IsError(); got != c.want {
			t.Errorf("kind=%v status=%d err=%q: IsError=%v want %v", c.kind, c.status, c.errTyp, got, c.want)
		}
	}
}
