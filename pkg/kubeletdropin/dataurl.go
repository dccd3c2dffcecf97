package kubeletdropin

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/vincent-petithory/dataurl"
)

// decodeDataURL reads an Ignition file source: an RFC 2397 data URL,
// base64 or percent-encoded (the forms MachineConfigs carry), with the
// library Ignition and MCO read them with (MCO
// pkg/controller/common/helpers.go DecodeIgnitionFileContents); "" is an
// empty file.
func decodeDataURL(src string) ([]byte, error) {
	if src == "" {
		return nil, nil
	}
	if !strings.HasPrefix(src, "data:") {
		return nil, fmt.Errorf("source is not a data URL (a remote source cannot be read here)")
	}
	d, err := dataurl.DecodeString(src)
	if err != nil {
		return nil, fmt.Errorf("data URL: %w", err)
	}
	return d.Data, nil
}

// encodeDataURL writes data as the templates do.
func encodeDataURL(data []byte) string {
	return "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString(data)
}
