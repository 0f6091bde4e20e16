package images

import v1 "github.com/google/go-containerregistry/pkg/v1"

// Size is the compressed size of image's layers: what a pull transfers.
func Size(image v1.Image) (int64, error) {
	layers, err := image.Layers()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
