package queue

// MarshalText implements encoding.TextMarshaler (config files, flags).
func (p Policy) MarshalText() ([]byte, error) {
	if p > WSPT {
		_, err := ParsePolicy(p.String())
		return nil, err
	}
	return []byte(p.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParsePolicy.
func (p *Policy) UnmarshalText(b []byte) error {
	v, err := ParsePolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}
