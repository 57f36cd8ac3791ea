"""The kafkasim Streamlit app: `kafkasim app` (or `streamlit run app/streamlit_app.py`).

Pages: Explore (one scenario, every field, a sweep), Compare (scenarios side by side), Plan (the cheapest
configuration for a target) and Validate (predictions beside measured runs, a fit, the committed fidelity
reports). The pages live in page_*.py; this file only wires them.
"""
import streamlit as st

from kafkasim.app import page_compare, page_explore, page_plan, page_validate

st.set_page_config(page_title="kafkasim", page_icon="📨", layout="wide")

pages = [
    st.Page(page_explore.render, title="Explore", url_path="explore", default=True),
    st.Page(page_compare.render, title="Compare", url_path="compare"),
    st.Page(page_plan.render, title="Plan", url_path="plan"),
    st.Page(page_validate.render, title="Validate", url_path="validate"),
]
st.navigation(pages).run()
