"""The two discovery loops as policies of `DiscoveryStrategy`.

DiscoPER (Propose, Evaluate, Reflect): every free slot proposes one hypothesis as code; each is
run on train and gated; after every K evaluated hypotheses a Reflect node reads them as data
and writes gaps, confounds and compound hypotheses, which the next proposals' prompts carry.

ExperiGen (Generator, Experimenter): an outer loop acquires a seed hypothesis scoring best on
plausibility plus novelty against the bank; an inner loop refines it for T steps with a
short-term memory of the chain's (hypothesis, evidence) pairs; at the chain's end a Bonferroni
gate (alpha / T) decides, and the best accepted step enters the bank, pruned to K by greedy
max-min embedding distance. Chains run in parallel, one per free slot; each is sequential.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from engine.events import BankUpdated, ChainEnded
from engine.node import Node
from search.discovery import gates
from search.discovery.bank import claim_text, fallback_reason, prune_max_min
from search.discovery.job import DiscoveryJob
from search.discovery.prompts import hypothesis_prompt, refine_prompt, seed_prompt
from search.discovery.state import Record

if TYPE_CHECKING:
    from search.discovery.strategy import DiscoveryStrategy


class Policy(Protocol):
    def propose(self, slots: int) -> list[Node]: ...

    def prepare(self, job: DiscoveryJob, node: Node, seq: int) -> None: ...

    def evaluated(self, rec: Record) -> None: ...

    def confirms(self, rec: Record) -> bool: ...

    def done(self) -> bool: ...

    def finish_reason(self) -> str: ...


class DiscoPER:
    def __init__(self, s: DiscoveryStrategy) -> None:
        self.s, self.d = s, s.dcfg

    def _created(self) -> list[Record]:
        return [r for r in self.s.state.proposals() if r.kind == "hypothesis"]

    def propose(self, slots: int) -> list[Node]:
        st, out = self.s.state, []
        created = len(self._created())
        evaluated = sum(r.evaluated for r in self._created())
        reflect_open = any(n not in st.evaluated for n in st.reflect_nodes)
        due = evaluated >= self.d.reflect_every * (len(st.reflect_nodes) + 1)
        if slots and due and not reflect_open and created < self.d.max_hypotheses:
            index = len(st.reflect_nodes) + 1
            out.append(self.s.node("reflect", plan=f"reflection #{index}", index=index, iteration=evaluated))
        while len(out) < slots and created < self.d.max_hypotheses:
            created += 1
            out.append(self.s.node("hypothesis", plan=f"proposal #{created}", iteration=created))
        return out

    def prepare(self, job: DiscoveryJob, node: Node, seq: int) -> None:
        job.prompt = hypothesis_prompt(self.s.context(seq, int(node.params["iteration"]), self.d.history))

    def evaluated(self, rec: Record) -> None:
        if self.d.chosen_gate != "bh" and rec.status != "duplicate":
            # Bonferroni in DiscoPER: every planned hypothesis is one test of the family.
            self.s.train_gate(rec, bonferroni_tests=self.d.max_hypotheses)

    def confirms(self, rec: Record) -> bool:
        return True

    def done(self) -> bool:
        created = self._created()
        return len(created) >= self.d.max_hypotheses and all(r.evaluated for r in created)

    def finish_reason(self) -> str:
        return (
            f"DiscoPER: {len(self._created())} hypotheses tested with {len(self.s.state.reflect_nodes)} "
            f"reflection(s), gate {self.d.chosen_gate}"
        )


class ExperiGen:
    def __init__(self, s: DiscoveryStrategy) -> None:
        self.s, self.d = s, s.dcfg

    def propose(self, slots: int) -> list[Node]:
        st, out = self.s.state, list[Node]()
        for chain, steps in st.chains.items():
            if len(out) >= slots:
                break
            last = st.records[steps[-1]]
            if chain not in st.ended_chains and last.evaluated and len(steps) < self.d.chain_steps:
                out.append(
                    self.s.node(
                        "refine",
                        parent=last.id,
                        plan=f"chain {chain} step {len(steps) + 1}",
                        chain=chain,
                        step=len(steps) + 1,
                        iteration=len(st.chains),
                    )
                )
        started = len(st.chains)
        while len(out) < slots and started < self.d.max_chains:
            started += 1
            out.append(self.s.node("seed", plan=f"seed acquisition #{started}", iteration=started, step=1))
        return out

    def prepare(self, job: DiscoveryJob, node: Node, seq: int) -> None:
        st = self.s.state
        ctx = self.s.context(seq, int(node.params["iteration"]), self.d.history)
        if node.kind == "seed":
            bank = [st.records[i] for i in st.bank(seq)]
            job.bank_texts = [claim_text(r.hypothesis) for r in bank if r.hypothesis]
            job.prompt = seed_prompt(
                ctx, [self.s.tested(r, seq) for r in bank if r.hypothesis], self.d.seed_candidates
            )
            return
        chain = [st.records[i] for i in st.chains[str(node.params["chain"])] if i != node.id]
        job.prompt = refine_prompt(
            ctx,
            [self.s.tested(r, seq) for r in chain if r.hypothesis],
            int(node.params["step"]),
            self.d.chain_steps,
        )

    def evaluated(self, rec: Record) -> None:
        st = self.s.state
        assert rec.chain is not None
        steps = [st.records[i] for i in st.chains[rec.chain]]
        if (
            rec.chain in st.ended_chains
            or len(steps) < self.d.chain_steps
            or not all(r.evaluated for r in steps)
        ):
            return
        self._end_chain(rec.chain, steps)

    def _end_chain(self, chain: str, steps: list[Record]) -> None:
        d = self.d
        # A duplicate step was answered by an earlier test: it is neither decided again nor the best.
        triples = [
            (
                r.id,
                None if r.status == "duplicate" else r.evidence,
                r.hypothesis.expected_sign if r.hypothesis else 0,
            )
            for r in steps
        ]
        if d.chosen_gate == "bonferroni":
            best, decisions = gates.bonferroni_chain(
                triples,
                alpha=d.alpha,
                min_effect=d.min_effect,
                chain_length=d.chain_steps,
                global_tests=self.s.state.tests_done(),
            )
            for r in steps:
                if r.status != "duplicate":
                    self.s.decide(r, "chain", decisions[r.id])
        else:  # BH decides over the whole bank at the end; the chain keeps its strongest eligible step
            eligible = [
                (ev.log_p, sid)
                for sid, ev, sign in triples
                if ev is not None and abs(ev.effect_d) >= d.min_effect and (sign == 0 or ev.sign == sign)
            ]
            best = min(eligible)[1] if eligible else None
        self.s.record(ChainEnded(chain=chain, steps=[r.id for r in steps], best=best))
        if best is not None:
            self._enter_bank(best)

    def _enter_bank(self, best: str) -> None:
        st = self.s.state
        ids = [*st.bank(), best]
        texts = [claim_text(h) for h in (st.records[i].hypothesis for i in ids) if h]
        embedder = self.s.embedder(best)
        kept = prune_max_min(ids, texts, self.d.bank_capacity, embedder, keep_first=best)
        fallback = fallback_reason(embedder)
        self.s.record(
            BankUpdated(
                added=best,
                bank=kept,
                pruned=[i for i in ids if i not in kept],
                embedding_fallback=fallback or None,
            )
        )

    def confirms(self, rec: Record) -> bool:
        return rec.chain is not None and self.s.state.ended_chains.get(rec.chain) == rec.id

    def done(self) -> bool:
        st = self.s.state
        return len(st.chains) >= self.d.max_chains and all(c in st.ended_chains for c in st.chains)

    def finish_reason(self) -> str:
        st = self.s.state
        return (
            f"ExperiGen: {len(st.chains)} chains of up to {self.d.chain_steps} steps, "
            f"{len(st.bank())} claim(s) in the bank, gate {self.d.chosen_gate}"
        )


def make_policy(s: DiscoveryStrategy) -> Policy:
    return DiscoPER(s) if s.dcfg.mode == "discoper" else ExperiGen(s)
