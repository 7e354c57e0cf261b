package accounts

import "errors"

func lookup(id int) (string, error) {
	if id == 0 {
		return "", errors.New("no such account")
	}
	return "acct", nil
}

func Name(id int) string {
	name, err := lookup(id)
	return name
}
