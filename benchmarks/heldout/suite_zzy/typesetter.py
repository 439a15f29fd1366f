"""A typesetter's book jobs (otlp route): for each title in a publisher's batch, price the setting from the
rate card, check a flagged title's proof status in a sub-agent, total the job and route it against the
publisher's purchase order."""
from core import Agent

V = dict(ref_prefix="TS", task="quote the book job", check_noun="proof status check",
         request="read_publisher_batch", catalog="fetch_rate_card", cap="keep_purchase_order_limit",
         plan="schedule_titles", parse_plan="parse_title_schedule", lookup="match_rate_card_line",
         estimate="extract_page_count", parse_est="parse_pages", tool="price_setting",
         convert="convert_cents_to_gbp", record="add_job_line", sub="proof_status_check",
         sub_llm="resolve_title", sub_tool="fetch_proof_status", sub_sum="summarise_proofs",
         sub_parse="parse_proof_summary", total="total_job_price", route="choose_quote_signoff",
         note="write_job_quote", parse_note="read_job_quote", validate="validate_book_job", flaky=0,
         sub_late=True)

CASES = [
    dict(id="zzy_typesetter_1", kind="wrong_tool_args", point="estimate", index=3, mutation="neighbour_id",
         description="The model extracting the last title's page count names the next title's id, so the setting is priced for that title."),
    dict(id="zzy_typesetter_2", kind="off_by_one", point="parse_plan", mutation="skip_last",
         description="The schedule parser cuts the list one short, so the last scheduled title never gets a job line."),
    dict(id="zzy_typesetter_3", kind="hallucinated_value", point="summarise", mutation="invented_date",
         description="Summarising the proof record, the model states a check date three days after the one the record holds."),
    dict(id="zzy_typesetter_4", kind="unit_error", point="convert", index=3, mutation="units",
         description="The last title's price is converted from cents as if it were already in whole units of currency."),
    dict(id="zzy_typesetter_5", kind="subagent_wrong_entity", point="resolve", mutation="similar_name",
         description="The proof status sub-agent picks another title of the batch in place of the flagged one."),
]

AGENT = Agent(name="typesetter-book-jobs", route="otlp", domain="a typesetter's book jobs", module=__name__, v=V,
              unit="title", qty_unit="pages", currency="GBP", factor=0.0079, band=(1.5, 6.0), seed=41, items=4,
              names=["The Salt Road", "Harbour Lights", "A Winter Ledger", "The Glass Orchard", "Paper Moons",
                     "Northern Lines", "The Quiet Mill", "Small Hours", "The Tin Whistle", "Ferry Songs"],
              cases=CASES, approval="director_signoff", standard="send_quote", cap_noun="po_limit",
              qty_ranges=((48, 420),))
