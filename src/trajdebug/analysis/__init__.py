"""The analysis: failures, the error lifecycle, ranked root causes.

This module is the public face of the analysis layer; import from here, not from
the modules behind it (they are reorganized freely).  ``analyze(run)`` runs the
whole pipeline on one run and returns an `Analysis`: the stages of `STAGES`
over one `AnalysisState` (insert one with `insert_stage`).
"""

from __future__ import annotations

from trajdebug.analysis._content import text_of
from trajdebug.analysis._detect import Detector, Failure, detect
from trajdebug.analysis._evidence import SIGNAL_FAMILIES, family
from trajdebug.analysis._failures import FailureGroup, cut_short_steps, group_failures
from trajdebug.analysis._guided import STRATEGIES, Guided, GuidedSearch, Oracle, guided_search
from trajdebug.analysis._guided_result import (
    PROVED,
    SET_ASIDE,
    SINGLED_OUT,
    answer_standing,
    person_proof,
    proof,
    settled,
    singled_out,
    whose,
)
from trajdebug.analysis._localize import Candidate, Localization
from trajdebug.analysis._oracles import ExpectationOracle, ReferenceOracle
from trajdebug.analysis._pipeline import (
    STAGES,
    Analysis,
    analyses_to_dict,
    analyze,
    analyzed_run,
    insert_stage,
    run_stages,
    with_followed_edges,
)
from trajdebug.analysis._state import AnalysisState, Options, Stage
from trajdebug.analysis.diagnosers._context import SUMMARY_SAFE, Diagnoser, Evidence
from trajdebug.analysis.features import features
from trajdebug.analysis.inference import infer_dependencies, previous_turns
from trajdebug.analysis.learned import Model, load_model, rerank
from trajdebug.analysis.reference import is_original, references, same_agent
from trajdebug.core.graph import DependencyGraph, GraphError
from trajdebug.core.lifecycle import ErrorChain, ErrorLifecycle, ErrorReport, analyze_errors


__all__ = [
    "SIGNAL_FAMILIES",
    "STAGES",
    "STRATEGIES",
    "SUMMARY_SAFE",
    "Analysis",
    "AnalysisState",
    "Candidate",
    "DependencyGraph",
    "Detector",
    "Diagnoser",
    "ErrorChain",
    "ErrorLifecycle",
    "ErrorReport",
    "ExpectationOracle",
    "Evidence",
    "Failure",
    "FailureGroup",
    "GraphError",
    "Guided",
    "GuidedSearch",
    "Localization",
    "Options",
    "Oracle",
    "ReferenceOracle",
    "Stage",
    "Model",
    "analyses_to_dict",
    "analyze",
    "analyzed_run",
    "PROVED",
    "SET_ASIDE",
    "SINGLED_OUT",
    "answer_standing",
    "analyze_errors",
    "cut_short_steps",
    "detect",
    "family",
    "group_failures",
    "guided_search",
    "settled",
    "person_proof",
    "singled_out",
    "whose",
    "proof",
    "features",
    "infer_dependencies",
    "with_followed_edges",
    "insert_stage",
    "is_original",
    "load_model",
    "previous_turns",
    "references",
    "run_stages",
    "rerank",
    "same_agent",
    "text_of",
]
