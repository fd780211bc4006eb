package convert

import (
	"path/filepath"

	"github.com/ggufkit/ggufkit/convert/metadata"
)

// meta is the loaded authorship metadata of this conversion.
func (j *job) metadata(tensors []Tensor) (*metadata.Metadata, error) {
	pts := make([]metadata.ParamTensor, len(tensors))
	for i := range tensors {
		pts[i] = metadata.ParamTensor{Name: tensors[i].Name, Shape: tensors[i].Shape}
	}
	total, shared, expert, count := metadata.ParameterCount(pts)
	m, err := metadata.Load(j.opts.MetadataFile, j.model.Root, j.opts.ModelName, total)
	if err != nil {
		return nil, err
	}
	if m.Name == "" {
		m.Name = filepath.Base(j.model.Root)
	}
	if m.SizeLabel == "" && total > 0 {
		m.SizeLabel = metadata.SizeLabel(total, shared, expert, count)
	}
	return m, nil
}
