"""What an integrity check reports: findings a person can act on, and what was (not) checked."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Finding(BaseModel):
    message: str
    where: str = Field("", description="page, file or LaTeX label the finding is about")


class CheckResult(BaseModel):
    name: str
    status: Literal["ok", "findings", "skipped"]
    detail: str = Field("", description="what was compared, or why the check could not run")
    findings: list[Finding] = Field(default_factory=list)

    @classmethod
    def of(cls, name: str, findings: list[Finding], detail: str) -> CheckResult:
        return cls(name=name, status="findings" if findings else "ok", detail=detail, findings=findings)

    @classmethod
    def skipped(cls, name: str, why: str) -> CheckResult:
        return cls(name=name, status="skipped", detail=why)


class IntegrityReport(BaseModel):
    checks: list[CheckResult]

    def check(self, name: str) -> CheckResult:
        return next(c for c in self.checks if c.name == name)

    @property
    def findings(self) -> int:
        return sum(len(c.findings) for c in self.checks)

    def lines(self, limit: int = 40) -> list[str]:
        """One line per finding (for the area chair and the console), at most `limit`."""
        out = [
            f"{c.name}: {f.message}" + (f" ({f.where})" if f.where else "")
            for c in self.checks
            for f in c.findings
        ]
        return out[:limit] + ([f"... and {len(out) - limit} more"] if len(out) > limit else [])
