package loader

import (
	"errors"
	"strings"
)

func Header(doc string) (string, error) {
	if doc == "" {
		return "", errors.New("empty document")
	}
	if line, _, ok := strings.Cut(doc, "\n"); ok {
		return line, nil
	}
}
