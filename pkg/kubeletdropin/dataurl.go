package kubeletdropin

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
)

// decodeDataURL reads an Ignition file source: an RFC 2397 data URL,
// base64 or percent-encoded (the forms MachineConfigs carry); "" is an
// empty file.
func decodeDataURL(src string) ([]byte, error) {
	if src == "" {
		return nil, nil
	}
	rest, ok := strings.CutPrefix(src, "data:")
	if !ok {
		return nil, fmt.Errorf("source is not a data URL (a remote source cannot be read here)")
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("data URL without a comma")
	}
	if strings.HasSuffix(meta, ";base64") {
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, fmt.Errorf("data URL: %w", err)
		}
		return b, nil
	}
	s, err := url.PathUnescape(data)
	if err != nil {
		return nil, fmt.Errorf("data URL: %w", err)
	}
	return []byte(s), nil
}

// encodeDataURL writes data as the templates do.
func encodeDataURL(data []byte) string {
	return "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString(data)
}
