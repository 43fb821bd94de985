package natsjobs

import (
	"errors"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/seal"
)

// sealedPrefix starts a bearer token sealed by sealer: job records on the
// bus and in JetStream's files never hold the token in plain text.
const sealedPrefix = seal.Prefix

// sealContext binds a sealed bearer token to job records.
const sealContext = "kgagent job secret"

// sealer seals the secrets of job records (internal/seal, AES-256-GCM
// under Config.SecretKey), with this package's error messages.
type sealer struct{ s *seal.Sealer }

func newSealer(key []byte) (*sealer, error) {
	s, err := seal.New(key)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "job secret key")
	}
	return &sealer{s: s}, nil
}

// seal returns secret encrypted ("" stays "").
func (s *sealer) seal(secret string) string { return s.s.SealString(secret, sealContext) }

// open decrypts a sealed secret. Errors: EINVALID when it was sealed under
// another key (a restart without a persistent Config.SecretKey) or is
// damaged; a value that is not sealed is refused too.
func (s *sealer) open(sealed string) (string, error) {
	pt, err := s.s.OpenString(sealed, sealContext)
	switch {
	case err == nil:
		return pt, nil
	case errors.Is(err, seal.ErrNotSealed):
		return "", kgagent.Errorf(kgagent.EINVALID, "the job's bearer token is not sealed")
	case errors.Is(err, seal.ErrDamaged):
		return "", kgagent.Errorf(kgagent.EINVALID, "the job's bearer token is damaged")
	default:
		return "", kgagent.Errorf(kgagent.EINVALID, "the job's bearer token was sealed with another key (set the job secret key to the same value on every process)")
	}
}
