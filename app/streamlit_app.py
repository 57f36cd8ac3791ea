"""The kafkasim Streamlit app: `kafkasim app` (or `streamlit run app/streamlit_app.py`).

Pages: Explore (one scenario, every field, a sweep) and Compare (scenarios side by side). Plan and Validate come
with the capacity-planning and calibration issues. The pages live in page_*.py; this file only wires them.
"""
import streamlit as st

from kafkasim.app import page_compare, page_explore

st.set_page_config(page_title="kafkasim", page_icon="📨", layout="wide")

pages = [
    st.Page(page_explore.render, title="Explore", url_path="explore", default=True),
    st.Page(page_compare.render, title="Compare", url_path="compare"),
]
st.navigation(pages).run()
