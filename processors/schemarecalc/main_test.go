package schemarecalc_test

import (
	"testing"

	"github.com/rowfate/rowfate/internal/testenv"
)

func TestMain(m *testing.M) { testenv.VerifyNoLeaks(m) }
