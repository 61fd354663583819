#include "config/model_spec.h"

#include "config/names.h"

namespace tally {

const char* FamilyName(Family f) { return Name(f); }
const char* MlpName(MlpKind k) { return Name(k); }
const char* NormName(NormKind k) { return Name(k); }
const char* PositionName(PositionKind k) { return Name(k); }
const char* ActivationName(ActivationKind k) { return Name(k); }

}  // namespace tally
